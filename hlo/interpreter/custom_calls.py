"""``custom-call``: every target jaxlib's CPU backend registers, and XLA:CPU's ``TopK``.

:data:`JAXLIB_CPU_TARGETS` lists the custom-call targets jaxlib 0.10 registers
for the CPU platform (read from jaxlib itself: ``jaxlib.lapack.registrations()``,
``jaxlib.cpu_sparse.registrations()`` and
``jax._src.lib._jax.custom_call_targets("Host")`` after ``import jax``). Each
either runs here or is refused by name (:data:`REFUSED`, with the reason):

* the LAPACK FFI kernels ``lapack_<s|d|c|z><routine>_ffi`` run through SciPy's
  LAPACK, the library jaxlib itself calls (:mod:`hlo.interpreter.lapack`);
* ``TopK`` (XLA:CPU's own target, which XLA's ``TopkRewriter`` makes from a
  sort): the ``k`` first elements of each row of a stable sort by its
  comparator (of values, or of (value, s32 index) pairs), with their indices;
* ``cpu_csr_sparse_dense_ffi`` (``data, indptr, indices, rhs``): a CSR matrix
  with as many rows as the result times a dense matrix or vector;
* ``dce_sink`` (a side-effecting call with no results that only keeps JAX from
  deleting its operand) does nothing and returns ``()``;
* ``tridiagonal_solve_perturbed_ffi`` runs jaxlib's algorithm
  (:mod:`hlo.interpreter.tridiagonal_solve`);
* host callbacks (``xla_*python_cpu_callback``) are refused: they call back into
  the Python program that built the module.

Any other target is refused too, naming it.
"""

from __future__ import annotations

import re

import numpy as np

from hlo.interpreter.lapack import KERNELS, run_lapack
from hlo.interpreter.machine import Machine, error_at, register
from hlo.interpreter.sort import stable_order
from hlo.interpreter.tridiagonal_solve import tridiagonal_solve_perturbed
from hlo.interpreter.values import Value, dtype_of
from hlo.ir import ComputationRef, Instruction, Quoted, Verbatim
from hlo.shape import ArrayShape, TupleShape

#: The LAPACK routines jaxlib wraps, by the name of their real (s/d) and complex (c/z) variants.
_LAPACK_ROUTINES = (
    ("getrf", "getrf"), ("geqrf", "geqrf"), ("geqp3", "geqp3"), ("orgqr", "ungqr"),
    ("ormqr", "unmqr"), ("potrf", "potrf"), ("gesdd", "gesdd"), ("gesvd", "gesvd"),
    ("syevd", "heevd"), ("geev", "geev"), ("gees", "gees"), ("gehrd", "gehrd"),
    ("sytrd", "hetrd"), ("trsm", "trsm"), ("gtsv", "gtsv"),
)

#: Targets refused by name, with the reason.
REFUSED: dict[str, str] = {
    "xla_ffi_python_cpu_callback": "it calls back into the Python host program",
    "xla_ffi_partitioned_python_cpu_callback": "it calls back into the Python host program",
    "xla_buffer_python_cpu_callback": "it calls back into the Python host program",
}

#: Targets that run here besides the LAPACK family (see the module doc).
OTHER_TARGETS = ("cpu_csr_sparse_dense_ffi", "dce_sink", "tridiagonal_solve_perturbed_ffi")

#: Every custom-call target jaxlib 0.10 registers for CPU (the LAPACK family for s/d/c/z).
JAXLIB_CPU_TARGETS: frozenset[str] = frozenset(
    [f"lapack_{p}{real if p in 'sd' else cplx}_ffi"
     for real, cplx in _LAPACK_ROUTINES for p in "sdcz"] + list(REFUSED) + list(OTHER_TARGETS)
)

_LAPACK = re.compile(r"lapack_([sdcz])([a-z0-9]+)_ffi$")


def _target(instr: Instruction) -> str:
    value = instr.attr("custom_call_target")
    return value.text if isinstance(value, Quoted) else str(value)


def _config(instr: Instruction) -> dict[str, int]:
    """``backend_config={uplo = 76 : ui8, left = false}`` as ``{"uplo": 76, "left": 0}``."""
    value = instr.attr("backend_config")
    text = value.text if isinstance(value, (Quoted, Verbatim)) else str(value or "")
    found = re.findall(r"(\w+)\s*=\s*(-?\d+|true|false)", text)
    return {k: {"true": 1, "false": 0}[v] if v in ("true", "false") else int(v) for k, v in found}


def _batch_dims(instr: Instruction) -> int:
    attrs = instr.attr("frontend_attributes")
    text = attrs.text if isinstance(attrs, (Quoted, Verbatim)) else str(attrs or "")
    found = re.search(r'num_batch_dims="(\d+)"', text)
    return int(found.group(1)) if found else 0


def _result_specs(instr: Instruction) -> list[tuple[tuple[int, ...], np.dtype]]:
    shape = instr.shape
    parts = shape.elements if isinstance(shape, TupleShape) else (shape,)
    specs = []
    for part in parts:
        if not isinstance(part, ArrayShape):
            raise error_at(instr, f"custom-call result {part} is not an array")
        specs.append((tuple(part.dims), dtype_of(part.element_type)))
    return specs


def _lapack_call(instr: Instruction, target: str, ops: list[Value]) -> Value:
    found = _LAPACK.match(target)
    kernel = KERNELS.get(found.group(2)) if found else None
    if target == "tridiagonal_solve_perturbed_ffi":
        kernel = tridiagonal_solve_perturbed
    if kernel is None or target not in JAXLIB_CPU_TARGETS:
        raise error_at(instr, f"unsupported custom-call '{target}'")
    specs = _result_specs(instr)
    try:
        results = run_lapack(kernel, _config(instr), [np.asarray(op) for op in ops], specs,
                             _batch_dims(instr))
    except (ValueError, TypeError, KeyError) as exc:
        raise error_at(instr, f"custom-call '{target}': {exc}") from None
    results = [r.astype(dtype, copy=False) for r, (_, dtype) in zip(results, specs)]
    return tuple(results) if isinstance(instr.shape, TupleShape) else results[0]


def _top_k(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    called = instr.attr("called_computations")
    if not called or not isinstance(called[0], ComputationRef):
        raise error_at(instr, "TopK needs its comparator in called_computations")
    x = np.asarray(ops[0])
    specs = _result_specs(instr)
    if len(specs) != 2 or x.ndim not in (1, 2):
        raise error_at(instr, "TopK takes f[n] or f[batch,n] and returns (values, s32 indices)")
    k = specs[0][0][-1]
    rows = x.reshape(-1, x.shape[-1])
    # The comparator compares values, or (value, index) pairs when it came from a sort of both.
    arity = len(m.computation(called[0].name).parameter_instructions())
    if arity not in (2, 4):
        raise error_at(instr, f"TopK comparator takes {arity} parameters, not 2 or 4")
    keys = [rows] if arity == 2 else [rows, np.broadcast_to(np.arange(rows.shape[1], dtype=np.int32),
                                                            rows.shape)]
    order = stable_order(m, called[0].name, keys)[:, :k]
    values = np.take_along_axis(rows, order, axis=1)
    return values.reshape(specs[0][0]), order.astype(np.int32).reshape(specs[1][0])


def _csr_sparse_dense(instr: Instruction, ops: list[Value]) -> Value:
    data, indptr, indices, rhs = (np.asarray(op) for op in ops)
    ((dims, dtype),) = _result_specs(instr)
    rows = dims[0]
    if indptr.shape != (rows + 1,) or indices.shape != data.shape or data.ndim != 1:
        raise error_at(instr, f"CSR operands data{list(data.shape)}, indptr{list(indptr.shape)}, "
                              f"indices{list(indices.shape)} do not describe {rows} rows")
    counts = np.diff(indptr.astype(np.int64))
    if (counts < 0).any() or indptr[-1] > len(data) or ((indices < 0) | (indices >= len(rhs))).any():
        raise error_at(instr, "CSR indptr/indices out of range")
    row_of = np.repeat(np.arange(rows), counts)
    used = int(indptr[-1]) - int(indptr[0])
    start = int(indptr[0])
    dense = rhs.reshape(len(rhs), -1)
    wide = np.complex128 if dtype.kind == "c" else np.float64 if dtype.kind == "f" else np.int64
    terms = data[start:start + used, None].astype(wide) * dense[indices[start:start + used]].astype(wide)
    out = np.zeros((rows, dense.shape[1]), wide)
    np.add.at(out, row_of[:used], terms)
    return out.astype(dtype).reshape(dims)


@register("custom-call")
def _custom_call(m: Machine, instr: Instruction, ops: list[Value]) -> Value:
    target = _target(instr)
    if target == "TopK":
        return _top_k(m, instr, ops)
    if target == "dce_sink":
        if instr.shape != TupleShape(()):
            raise error_at(instr, f"dce_sink returns (), not {instr.shape}")
        return ()
    if target == "cpu_csr_sparse_dense_ffi":
        return _csr_sparse_dense(instr, ops)
    if target in REFUSED:
        raise error_at(instr, f"custom-call target '{target}' is not supported: {REFUSED[target]}")
    if target.startswith("lapack_") or target == "tridiagonal_solve_perturbed_ffi":
        return _lapack_call(instr, target, ops)
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
