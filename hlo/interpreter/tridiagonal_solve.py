"""jaxlib's ``tridiagonal_solve_perturbed_ffi``: a tridiagonal solve that survives singular matrices.

``jax.lax.linalg.tridiagonal_solve(..., perturb_singular=True)`` emits it on CPU.
Operands ``dl, d, du`` (``[..., n]``; ``dl[0]`` and ``du[n-1]`` unused) and ``b``
(``[..., n, k]``); one result, the solution. The algorithm is jaxlib's (after
LAPACK's ``xLAGTF`` + ``xLAGTS``): Gaussian elimination with partial row pivoting
that solves ``L z = P b`` on the fly, then back substitution in which a pivot of
magnitude below 1 that would overflow the row it divides is pushed away from zero
by ``eps * max|U|``, doubling until it is safe (or the row is scaled up when the
pivot is below the safe minimum). Arithmetic stays in the element type, step by
step as jaxlib does it, so rounding matches up to the compiler's reassociation.
"""

from __future__ import annotations

import numpy as np


def _real_type(dtype: np.dtype) -> type:
    return np.float32 if dtype in (np.float32, np.complex64) else np.float64


def _maybe_perturb(perturb, pivot, row: np.ndarray, real: type):
    """The pivot (and row) after jaxlib's ``MaybePerturbPivot``."""
    one = real(1.0)
    info = np.finfo(real)
    tiny, small = real(info.tiny), one / real(info.max)
    safemin = tiny if small < tiny else real(small * (one + real(info.eps)))
    bignum = one / safemin
    abs_pivot = real(abs(pivot))
    if abs_pivot >= one:
        return pivot, row
    perturb = real(np.copysign(max(real(abs(perturb)), safemin), np.real(pivot)))
    max_factor = real(np.abs(row).max(initial=0.0))
    while abs_pivot < one:
        if abs_pivot < safemin:
            if abs_pivot == 0 or max_factor * safemin > abs_pivot:
                pivot, perturb = pivot + perturb, perturb * real(2.0)
            else:
                return pivot * bignum, row * bignum
        elif max_factor > abs_pivot * bignum:
            pivot, perturb = pivot + perturb, perturb * real(2.0)
        else:
            break
        abs_pivot = real(abs(pivot))
    return pivot, row


def _eliminate(dl, d, du, b):
    """Row-pivoted elimination: U's three diagonals (columns of ``u``), ``z`` and ``max|U|``."""
    n = len(d)
    u = np.zeros((n, 3), d.dtype)
    x = b.copy()
    u[0, 0], u[0, 1] = d[0], du[0]
    max_abs_u = max(abs(u[0, 0]), abs(u[0, 1]))
    scale1 = abs(u[0, 0]) + abs(u[0, 1])
    for k in range(n - 1):
        u[k + 1, 0] = d[k + 1]
        scale2 = abs(dl[k + 1]) + abs(u[k + 1, 0])
        if k < n - 2:
            scale2 += abs(du[k + 1])
        if dl[k + 1] == 0:
            scale1 = scale2
            u[k + 1, 1], u[k, 2] = du[k + 1], 0
        else:
            piv1 = 0 if u[k, 0] == 0 else abs(u[k, 0]) / scale1
            piv2 = abs(dl[k + 1]) / scale2
            if piv2 <= piv1:
                scale1 = scale2
                factor = dl[k + 1] / u[k, 0]
                u[k + 1, 0] -= factor * u[k, 1]
                u[k + 1, 1], u[k, 2] = du[k + 1], 0
                x[k + 1] = b[k + 1] - factor * x[k]
            else:
                factor = u[k, 0] / dl[k + 1]
                utmp = u[k, 1]
                u[k, 0] = dl[k + 1]
                u[k + 1, 0] = utmp - factor * d[k + 1]
                u[k, 1] = d[k + 1]
                if k < n - 2:
                    u[k, 2] = du[k + 1]
                    u[k + 1, 1] = -factor * du[k + 1]
                x[k + 1] = x[k] - factor * b[k + 1]
                x[k] = b[k + 1]
                scale1 = abs(u[k + 1, 0]) + abs(u[k + 1, 1])
        if k < n - 2:
            max_abs_u = max(max_abs_u, *np.abs(u[k]))
    return u, x, max(max_abs_u, abs(u[n - 1, 0]))


def tridiagonal_solve_perturbed(cfg, ops, outs):
    dl, d, du, b = ops
    real = _real_type(d.dtype)
    n = len(d)
    if n == 0:
        return [b.copy()]
    if n == 1:
        p, row = _maybe_perturb(real(np.finfo(real).eps) * real(abs(d[0])), d[0], b[0].copy(), real)
        return [(row / p).reshape(b.shape).astype(b.dtype)]
    u, x, max_abs_u = _eliminate(dl, d, du, b)
    perturb = real(np.finfo(real).eps) * real(max_abs_u)
    one = d.dtype.type(1.0)
    for k in range(n - 1, -1, -1):
        row = x[k].copy()
        if k + 1 < n:
            row = row - u[k, 1] * x[k + 1]
        if k + 2 < n:
            row = row - u[k, 2] * x[k + 2]
        sign = perturb if k == n - 1 else real(np.copysign(perturb, np.real(u[k, 0])))
        p, row = _maybe_perturb(sign, u[k, 0], row, real)
        x[k] = row * (one / p)
    return [x]
