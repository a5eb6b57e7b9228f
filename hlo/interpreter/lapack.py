"""jaxlib's LAPACK FFI kernels (``lapack_<p><routine>_ffi``), run through SciPy's LAPACK.

jaxlib's CPU kernels call the LAPACK routines that SciPy exports
(``scipy.linalg.cython_lapack``), so calling the same routines through
``scipy.linalg.lapack`` reproduces their outputs. Each kernel below takes one
matrix problem (batch dims stripped) and returns the custom-call's results in
jaxlib's order; :func:`run_lapack` maps it over the leading ``num_batch_dims``.

Conventions (jaxlib 0.10 ``lapack_kernels.cc``, read for the outputs only):

* operands and results are logical matrices; the column-major
  ``operand_layout_constraints`` only tell where LAPACK reads them;
* ``backend_config`` holds ASCII codes: ``uplo`` 76 'L' / 85 'U'; ``mode`` 65 'A'
  (full U, Vt), 83 'S' (thin), 78 'N' (none), 86 'V' (vectors); ``trans_x`` 78 'N',
  84 'T', 67 'C'; ``side`` 76 'L' / 82 'R'; ``diag`` 85 unit; ``compute_left`` /
  ``compute_right`` 86 'V' / 78 'N'; ``sort`` 78 'N' (the only order jaxlib has);
  ``low``/``high`` are 1-based ``ilo``/``ihi``; ``left``/``transpose`` are booleans;
* ``info`` results are s32 per problem; pivots (``getrf``, ``geqp3``) are 1-based;
* outputs LAPACK does not define (U/Vt with mode 'N', Schur vectors with mode 'N',
  eigenvectors not asked for, everything but ``info`` when ``geev`` gets a
  non-finite matrix, where jaxlib skips LAPACK and reports ``info = -4``) are
  left uninitialized by jaxlib; here they are zero.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator

import numpy as np

Kernel = Callable[[dict[str, int], list[np.ndarray], list[tuple[tuple[int, ...], np.dtype]]],
                  list[np.ndarray]]

_PREFIX = {np.dtype(np.float32): "s", np.dtype(np.float64): "d",
           np.dtype(np.complex64): "c", np.dtype(np.complex128): "z"}


def routine(dtype: np.dtype, real: str, complex_name: str | None = None):
    """SciPy's wrapper of LAPACK routine ``real`` (``complex_name`` for c/z) for ``dtype``."""
    from scipy.linalg import lapack

    dtype = np.dtype(dtype)
    name = complex_name if complex_name is not None and dtype.kind == "c" else real
    return getattr(lapack, _PREFIX[dtype] + name)


def _fortran(a: np.ndarray) -> np.ndarray:
    return np.array(a, order="F", copy=True)


def _lwork(dtype: np.dtype, name: str, *args, **kwargs) -> int:
    """The optimal workspace LAPACK reports, as jaxlib asks for it."""
    from scipy.linalg import lapack

    found = getattr(lapack, _PREFIX[np.dtype(dtype)] + name + "_lwork")(*args, **kwargs)
    work = found[0]
    return max(1, int(np.ceil(np.real(work) * (1 + 1e-6))))


def _zeros(spec: tuple[tuple[int, ...], np.dtype]) -> np.ndarray:
    return np.zeros(spec[0], spec[1])


def _info(value: int) -> np.ndarray:
    return np.array(value, np.int32)


# -- factorizations ---------------------------------------------------------


def getrf(cfg, ops, outs):
    (a,) = ops
    lu, piv, info = routine(a.dtype, "getrf")(a)
    k = min(a.shape)
    return [lu, (piv[:k] + 1).astype(np.int32), _info(info)]  # SciPy's ipiv is 0-based


def geqrf(cfg, ops, outs):
    (a,) = ops
    lwork = _lwork(a.dtype, "geqrf", *a.shape)
    qr, tau, _work, _info_ = routine(a.dtype, "geqrf")(a, lwork=lwork)
    return [qr, tau[: min(a.shape)]]


def geqp3(cfg, ops, outs):
    a, jpvt = ops
    if np.any(jpvt != 0):
        raise ValueError("geqp3 with columns pinned in jpvt (non-zero entries) is not supported")
    qr, piv, tau, _work, _info_ = routine(a.dtype, "geqp3")(a)
    return [qr, piv.astype(np.int32), tau[: min(a.shape)]]


def orgqr(cfg, ops, outs):
    a, tau = ops
    fn = routine(a.dtype, "orgqr", "ungqr")
    work = fn(a, tau, lwork=-1)[1]
    q, _work, _info_ = fn(a, tau, lwork=max(1, int(np.real(work[0]))))
    return [q]


def ormqr(cfg, ops, outs):
    a, tau, c = ops
    side = "L" if cfg.get("left", 1) else "R"
    trans = ("C" if a.dtype.kind == "c" else "T") if cfg.get("transpose", 0) else "N"
    fn = routine(a.dtype, "ormqr", "unmqr")
    work = fn(side, trans, a, tau, c, -1)[1]
    cq, _work, _info_ = fn(side, trans, a, tau, c, max(1, int(np.real(work[0]))))
    return [cq]


def potrf(cfg, ops, outs):
    (a,) = ops
    factor, info = routine(a.dtype, "potrf")(a, lower=int(cfg.get("uplo", 76) == 76), clean=0)
    return [factor, _info(info)]


def _svd(name: str):
    def kernel(cfg, ops, outs):
        (a,) = ops
        mode = cfg.get("mode", 65)
        vectors = mode != 78
        full = mode == 65
        m, n = a.shape
        lwork = _lwork(a.dtype, name, m, n, compute_uv=int(vectors), full_matrices=int(full))
        a_out = _fortran(a)
        u, s, vt, info = routine(a.dtype, name)(a_out, compute_uv=int(vectors),
                                                 full_matrices=int(full), lwork=lwork,
                                                 overwrite_a=1)
        if not vectors:
            u, vt = _zeros(outs[2]), _zeros(outs[3])
        return [a_out, s, u, vt, _info(info)]

    return kernel


def syevd(cfg, ops, outs):
    (a,) = ops
    vectors = cfg.get("mode", 86) == 86
    lower = int(cfg.get("uplo", 76) == 76)
    a_out = _fortran(a)
    w, v, info = routine(a.dtype, "syevd", "heevd")(a_out, compute_v=int(vectors), lower=lower,
                                                     overwrite_a=1)
    return [v if vectors else a_out, w, _info(info)]


def _unpack(wi: np.ndarray, packed: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """LAPACK's real packing of complex-conjugate eigenvector pairs, as complex columns."""
    out = packed.astype(dtype)
    j, n = 0, len(wi)
    while j < n:
        if wi[j] == 0 or np.isnan(wi[j]) or j + 1 == n:
            j += 1
            continue
        out[:, j] = packed[:, j] + 1j * packed[:, j + 1]
        out[:, j + 1] = packed[:, j] - 1j * packed[:, j + 1]
        j += 2
    return out


def geev(cfg, ops, outs):
    (a,) = ops
    left, right = cfg.get("compute_left", 78) == 86, cfg.get("compute_right", 86) == 86
    results = [_zeros(spec) for spec in outs]
    if not np.all(np.isfinite(a)):
        results[-1] = _info(-4)
        return results
    fn = routine(a.dtype, "geev")
    lwork = _lwork(a.dtype, "geev", a.shape[0], compute_vl=int(left), compute_vr=int(right))
    if a.dtype.kind == "c":
        w, vl, vr, info = fn(a, compute_vl=int(left), compute_vr=int(right), lwork=lwork)
        results[0] = w
    else:
        wr, wi, vl, vr, info = fn(a, compute_vl=int(left), compute_vr=int(right), lwork=lwork)
        results[0], results[1] = wr, wi
        if info == 0:
            vl, vr = (_unpack(wi, v, outs[2][1]) for v in (vl, vr))
    if info == 0:
        if left:
            results[-3] = vl
        if right:
            results[-2] = vr
    results[-1] = _info(info)
    return results


def gees(cfg, ops, outs):
    (a,) = ops
    if cfg.get("sort", 78) != 78:
        raise ValueError("gees with eigenvalue sorting is not supported (jaxlib has none)")
    vectors = cfg.get("mode", 86) == 86
    fn = routine(a.dtype, "gees")
    n = a.shape[0]
    lwork = int(np.real(fn(lambda *_: None, a, compute_v=int(vectors), lwork=-1)[-2][0]))
    found = fn(lambda *_: None, a, compute_v=int(vectors), lwork=max(1, lwork, 3 * n))
    if a.dtype.kind == "c":
        t, sdim, w, vs, _work, info = found
        values = [w]
    else:
        t, sdim, wr, wi, vs, _work, info = found
        values = [wr, wi]
    vs = vs if vectors else _zeros(outs[1])
    return [t, vs, *values, _info(sdim), _info(info)]


def gehrd(cfg, ops, outs):
    (a,) = ops
    n = a.shape[0]
    lo, hi = cfg.get("low", 1) - 1, cfg.get("high", n) - 1  # SciPy's lo/hi are 0-based
    lwork = _lwork(a.dtype, "gehrd", n, lo=lo, hi=hi)
    h, tau, info = routine(a.dtype, "gehrd")(a, lo=lo, hi=hi, lwork=lwork)
    return [h, tau[: max(n - 1, 0)], _info(info)]


def sytrd(cfg, ops, outs):
    (a,) = ops
    lower = int(cfg.get("uplo", 76) == 76)
    lwork = _lwork(a.dtype, "sytrd" if a.dtype.kind == "f" else "hetrd", a.shape[0], lower=lower)
    c, d, e, tau, info = routine(a.dtype, "sytrd", "hetrd")(a, lower=lower, lwork=lwork)
    return [c, d, e, tau, _info(info)]


def trsm(cfg, ops, outs):
    from scipy.linalg import blas

    a, b = ops
    fn = getattr(blas, _PREFIX[a.dtype] + "trsm")
    trans = {78: 0, 84: 1, 67: 2}[cfg.get("trans_x", 78)]
    x = fn(1.0, a, b, side=int(cfg.get("side", 76) != 76), lower=int(cfg.get("uplo", 76) == 76),
           trans_a=trans, diag=int(cfg.get("diag", 78) == 85))
    return [x]


def gtsv(cfg, ops, outs):
    dl, d, du, b = ops
    # jaxlib hands LAPACK dl[1:] (dl[0] is padding) and du, whose last entry is padding.
    du2, d_out, du_out, x, info = routine(d.dtype, "gtsv")(dl[1:], d, du[:-1], b)
    dl_out = dl.copy()
    dl_out[1:len(du2) + 1] = du2
    du_full = du.copy()
    du_full[:-1] = du_out
    return [dl_out, d_out, du_full, x, _info(info)]


#: routine -> kernel; the name a target carries after its s/d/c/z prefix.
KERNELS: dict[str, Kernel] = {
    "getrf": getrf, "geqrf": geqrf, "geqp3": geqp3, "orgqr": orgqr, "ungqr": orgqr,
    "ormqr": ormqr, "unmqr": ormqr, "potrf": potrf, "gesdd": _svd("gesdd"),
    "gesvd": _svd("gesvd"), "syevd": syevd, "heevd": syevd, "geev": geev, "gees": gees,
    "gehrd": gehrd, "sytrd": sytrd, "hetrd": sytrd, "trsm": trsm, "gtsv": gtsv,
}


def run_lapack(kernel: Kernel, cfg: dict[str, int], ops: list[np.ndarray],
               out_specs: list[tuple[tuple[int, ...], np.dtype]],
               batch_dims: int) -> list[np.ndarray]:
    """Map ``kernel`` over the leading ``batch_dims`` dims of every operand and result."""
    with _lapack_messages_to_stderr():
        return _run_batched(kernel, cfg, ops, out_specs, batch_dims)


@contextlib.contextmanager
def _lapack_messages_to_stderr() -> Iterator[None]:
    """LAPACK's XERBLA writes "** On entry to ..." to file descriptor 1 on illegal (e.g.
    non-finite) input; while a kernel runs, descriptor 1 points at stderr so that a command's
    standard output (``verify --json``) stays its own."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)


def _run_batched(kernel: Kernel, cfg: dict[str, int], ops: list[np.ndarray],
                 out_specs: list[tuple[tuple[int, ...], np.dtype]],
                 batch_dims: int) -> list[np.ndarray]:
    batch = out_specs[0][0][:batch_dims]
    count = int(np.prod(batch, dtype=np.int64))
    per_problem = [(dims[batch_dims:], dtype) for dims, dtype in out_specs]
    flat_ops = [op.reshape((count,) + op.shape[batch_dims:]) for op in ops]
    results = [np.zeros((count,) + dims, dtype) for dims, dtype in per_problem]
    for i in range(count):
        for slot, value in zip(results, kernel(cfg, [op[i] for op in flat_ops], per_problem)):
            slot[i] = np.asarray(value).reshape(slot.shape[1:])
    return [r.reshape(spec[0]) for r, spec in zip(results, out_specs)]
