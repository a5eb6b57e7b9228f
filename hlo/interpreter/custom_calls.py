"""``custom-call`` targets: the LAPACK kernels that JAX emits on CPU.

Conventions (jaxlib's ``lapack_*_ffi`` kernels, read from the corpus): the
leading ``num_batch_dims`` dims are batch dims; operands and results are
logical matrices (the column-major ``operand_layout_constraints`` only tell
where LAPACK reads them, which the interpreter does not need); ``info`` results
are s32 per batch element; ``getrf`` pivots are LAPACK's 1-based ``ipiv``;
``backend_config`` bytes are ASCII letters (``uplo = 76`` is 'L', ``85`` 'U',
``trans_x = 78`` 'N', ``84`` 'T', ``67`` 'C', ``diag = 85`` unit, ``side = 76`` left,
``mode = 86`` eigenvectors). The kernels are SciPy's LAPACK wrappers, the same
library jaxlib calls.
"""

from __future__ import annotations

import re

import numpy as np

from hlo.interpreter.machine import Machine, error_at, register
from hlo.interpreter.values import InterpretError, Value
from hlo.ir import Instruction, Quoted, Verbatim


def _target(instr: Instruction) -> str:
    value = instr.attr("custom_call_target")
    return value.text if isinstance(value, Quoted) else str(value)


def _config(instr: Instruction) -> dict[str, int]:
    value = instr.attr("backend_config")
    text = value.text if isinstance(value, (Quoted, Verbatim)) else str(value or "")
    return {k: int(v) for k, v in re.findall(r"(\w+)\s*=\s*(-?\d+)", text)}


def _batch_dims(instr: Instruction) -> int:
    attrs = instr.attr("frontend_attributes")
    text = attrs.text if isinstance(attrs, (Quoted, Verbatim)) else str(attrs or "")
    found = re.search(r'num_batch_dims="(\d+)"', text)
    return int(found.group(1)) if found else 0


def _batched(x: np.ndarray, nb: int) -> tuple[tuple[int, ...], np.ndarray]:
    batch = x.shape[:nb]
    return batch, x.reshape(-1, *x.shape[nb:])


def _lapack(kind: str, dtype: np.dtype, name: str):
    from scipy.linalg import blas, lapack

    prefix = {np.dtype(np.float32): "s", np.dtype(np.float64): "d",
              np.dtype(np.complex64): "c", np.dtype(np.complex128): "z"}[dtype]
    module = blas if kind == "blas" else lapack
    return getattr(module, prefix + name)


def _potrf(instr: Instruction, a: np.ndarray, nb: int) -> Value:
    lower = _config(instr).get("uplo", 76) == 76
    batch, mats = _batched(a, nb)
    potrf = _lapack("lapack", a.dtype, "potrf")
    out = np.empty_like(mats)
    info = np.empty(len(mats), np.int32)
    for i, mat in enumerate(mats):
        factor, inf = potrf(mat, lower=lower, clean=False)
        out[i], info[i] = factor, inf
    return out.reshape(a.shape), info.reshape(batch)


def _getrf(instr: Instruction, a: np.ndarray, nb: int) -> Value:
    batch, mats = _batched(a, nb)
    getrf = _lapack("lapack", a.dtype, "getrf")
    out = np.empty_like(mats)
    k = min(a.shape[-2:])
    piv = np.empty((len(mats), k), np.int32)
    info = np.empty(len(mats), np.int32)
    for i, mat in enumerate(mats):
        lu, p, inf = getrf(mat)
        out[i], piv[i], info[i] = lu, p[:k] + 1, inf  # SciPy returns 0-based ipiv
    return out.reshape(a.shape), piv.reshape(*batch, k), info.reshape(batch)


def _geqrf(instr: Instruction, a: np.ndarray, nb: int) -> Value:
    batch, mats = _batched(a, nb)
    geqrf = _lapack("lapack", a.dtype, "geqrf")
    k = min(a.shape[-2:])
    out = np.empty_like(mats)
    taus = np.empty((len(mats), k), a.dtype)
    for i, mat in enumerate(mats):
        qr, tau, _work, _info = geqrf(mat)
        out[i], taus[i] = qr, tau[:k]
    return out.reshape(a.shape), taus.reshape(*batch, k)


def _orgqr(instr: Instruction, a: np.ndarray, tau: np.ndarray, nb: int) -> Value:
    batch, mats = _batched(a, nb)
    _, taus = _batched(tau, nb)
    orgqr = _lapack("lapack", a.dtype, "orgqr" if a.dtype.kind == "f" else "ungqr")
    out = np.empty_like(mats)
    for i, mat in enumerate(mats):
        q, _work, _info = orgqr(mat, taus[i])
        out[i] = q
    return out.reshape(a.shape)


def _syevd(instr: Instruction, a: np.ndarray, nb: int) -> Value:
    cfg = _config(instr)
    lower = cfg.get("uplo", 76) == 76
    vectors = cfg.get("mode", 86) == 86
    batch, mats = _batched(a, nb)
    syevd = _lapack("lapack", a.dtype, "syevd" if a.dtype.kind == "f" else "heevd")
    n = a.shape[-1]
    vecs = np.empty_like(mats)
    vals = np.empty((len(mats), n), np.float32 if a.dtype in (np.float32, np.complex64) else np.float64)
    info = np.empty(len(mats), np.int32)
    for i, mat in enumerate(mats):
        w, v, inf = syevd(mat, compute_v=int(vectors), lower=int(lower))
        vecs[i] = v if vectors else mat
        vals[i], info[i] = w, inf
    return vecs.reshape(a.shape), vals.reshape(*batch, n), info.reshape(batch)


def _trsm(instr: Instruction, a: np.ndarray, b: np.ndarray, nb: int) -> Value:
    cfg = _config(instr)
    left = cfg.get("side", 76) == 76
    lower = cfg.get("uplo", 76) == 76
    trans = {78: 0, 84: 1, 67: 2}[cfg.get("trans_x", 78)]
    unit = cfg.get("diag", 78) == 85
    _, amats = _batched(a, nb)
    _, bmats = _batched(b, nb)
    trsm = _lapack("blas", a.dtype, "trsm")
    out = np.empty_like(bmats)
    for i in range(len(bmats)):
        out[i] = trsm(1.0, amats[i], bmats[i], side=int(not left), lower=int(lower),
                      trans_a=trans, diag=int(unit))
    return out.reshape(b.shape)


_LAPACK = re.compile(r"lapack_([sdcz])(potrf|getrf|geqrf|orgqr|ungqr|syevd|heevd|trsm)(_ffi)?$")


@register("custom-call")
def _custom_call(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    target = _target(instr)
    found = _LAPACK.match(target)
    if found is None:
        raise InterpretError(f"unsupported custom-call '{target}' ({instr.name})")
    kind = found.group(2)
    nb = _batch_dims(instr)
    if kind == "potrf":
        return _potrf(instr, ops[0], nb)
    if kind == "getrf":
        return _getrf(instr, ops[0], nb)
    if kind == "geqrf":
        return _geqrf(instr, ops[0], nb)
    if kind in ("orgqr", "ungqr"):
        return _orgqr(instr, ops[0], ops[1], nb)
    if kind in ("syevd", "heevd"):
        return _syevd(instr, ops[0], nb)
    if kind == "trsm":
        return _trsm(instr, ops[0], ops[1], nb)
    raise error_at(instr, f"unsupported custom-call '{target}'")


# ---------------------------------------------------------------------------
# The HLO linear-algebra opcodes (before XLA expands them)
# ---------------------------------------------------------------------------


@register("cholesky")
def _cholesky(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    # Only the requested triangle is defined by HLO; the other is returned as 0.
    a = ops[0]
    lower = bool(instr.attr("lower", False))
    wide = a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)
    if not lower:
        wide = np.conj(np.swapaxes(wide, -1, -2))
    try:
        factor = np.linalg.cholesky(wide)
    except np.linalg.LinAlgError:
        factor = np.full(wide.shape, np.nan, wide.dtype)
    if not lower:
        factor = np.conj(np.swapaxes(factor, -1, -2))
    return factor.astype(a.dtype)


@register("triangular-solve")
def _triangular_solve(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    a, b = ops
    wide_type = np.complex128 if a.dtype.kind == "c" else np.float64
    lower = bool(instr.attr("lower", False))
    tri = np.tril(a.astype(wide_type)) if lower else np.triu(a.astype(wide_type))
    if bool(instr.attr("unit_diagonal", False)):
        n = tri.shape[-1]
        tri = tri.copy()
        tri[..., np.arange(n), np.arange(n)] = 1
    transpose = str(instr.attr("transpose_a", "NO_TRANSPOSE"))
    if transpose in ("TRANSPOSE", "ADJOINT"):
        tri = np.swapaxes(tri, -1, -2)
        if transpose == "ADJOINT":
            tri = np.conj(tri)
    rhs = b.astype(wide_type)
    if bool(instr.attr("left_side", False)):
        x = np.linalg.solve(tri, rhs)  # op(a) @ x = b
    else:
        x = np.swapaxes(np.linalg.solve(np.swapaxes(tri, -1, -2), np.swapaxes(rhs, -1, -2)), -1, -2)
    return x.astype(b.dtype)
