"""Semantic equivalence of two modules on random inputs.

``compare_modules(original, rewritten)`` draws random arguments for the entry
parameters, runs both modules through the reference interpreter and compares
every output element.

Inputs (deterministic per ``seed`` and trial): floats are standard normal
(complex: normal real and imaginary parts), ``pred`` is a fair coin, integers
are uniform in ``[0, 8)`` (clipped to the type's range). Small non-negative
integers keep every integer parameter a valid index for gathers, dynamic
slices and scatters, and keep loop bounds small.

Comparison: integers and ``pred`` must be equal. Floats must be bit-identical
(NaN matches NaN, infinities must match) — or, unless ``exact=True``, agree
normwise: ``|a - b| <= rtol * max|a|`` over each output, where ``rtol`` is
:data:`FLOAT_TOLERANCE` of the least precise float type either module computes
in (bf16 anywhere in the module means bf16's tolerance). The tolerance exists
because rewrites may legitimately reassociate float arithmetic or keep excess
precision (XLA's simplifier turns ``x / c`` into ``x * (1/c)``, float
normalization computes bf16 ops in f32, a reduction over physically reordered
dims sums in another order); a layout mistake moves values between elements,
an error of the order of ``max|a|``, far outside it. The report says whether
the match was exact.

The rewritten module is also checked by the layout verifier
(:mod:`hlo.layout_verifier`); its violations are part of the report.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hlo.errors import HloError
from hlo.interpreter import evaluate
from hlo.interpreter.values import InterpretError, TOKEN, Value, dtype_of
from hlo.ir import Module
from hlo.shape import ArrayShape, Shape, TokenShape, TupleShape, leaf_arrays

#: (rtol) per float element type: the tolerance used when not ``exact``.
FLOAT_TOLERANCE: dict[str, float] = {
    "f64": 1e-9, "c128": 1e-9, "f32": 1e-4, "c64": 1e-4, "f16": 1e-2, "bf16": 5e-2,
}
_LOW_PRECISION_RTOL = 0.25  # fp8/fp4


@dataclass(frozen=True, slots=True)
class Difference:
    """The first output element where the two modules disagree."""

    trial: int
    output_index: tuple[int, ...]
    element_index: tuple[int, ...]
    original: str
    rewritten: str
    mismatches: int
    elements: int

    def __str__(self) -> str:
        path = "{" + ",".join(map(str, self.output_index)) + "}"
        return (
            f"output {path} element [{','.join(map(str, self.element_index))}]: "
            f"original {self.original}, rewritten {self.rewritten} "
            f"({self.mismatches} of {self.elements} elements differ, trial {self.trial})"
        )


@dataclass(frozen=True, slots=True)
class EquivalenceReport:
    equivalent: bool
    exact: bool
    seed: int
    trials: int
    difference: Difference | None = None
    max_relative_error: float = 0.0
    violations: tuple[str, ...] = ()
    verifier: str = "unavailable"
    notes: tuple[str, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return self.equivalent and not self.violations

    def to_json(self) -> dict[str, Any]:
        diff = self.difference
        return {
            "ok": self.ok,
            "equivalent": self.equivalent,
            "exact": self.exact,
            "seed": self.seed,
            "trials": self.trials,
            "max_relative_error": self.max_relative_error,
            "first_difference": None if diff is None else {
                "trial": diff.trial,
                "output_index": list(diff.output_index),
                "element_index": list(diff.element_index),
                "original": diff.original,
                "rewritten": diff.rewritten,
                "mismatches": diff.mismatches,
                "elements": diff.elements,
            },
            "verifier": self.verifier,
            "violations": list(self.violations),
            "notes": list(self.notes),
        }


# ---------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------


def random_value(shape: Shape, rng: np.random.Generator, float_scale: float = 1.0) -> Value:
    """A random argument for ``shape`` (see the module docstring for the distributions).

    ``float_scale`` multiplies the standard deviation of float values.
    """
    if isinstance(shape, TupleShape):
        return tuple(random_value(s, rng, float_scale) for s in shape.elements)
    if isinstance(shape, TokenShape):
        return TOKEN
    if not isinstance(shape, ArrayShape):
        raise InterpretError(f"cannot make an argument of shape {shape}")
    dtype = dtype_of(shape.element_type)
    dims = shape.dims
    if dtype == np.bool_:
        return rng.integers(0, 2, size=dims).astype(bool)
    if dtype.kind == "c":
        return np.asarray(float_scale * (rng.standard_normal(dims) + 1j * rng.standard_normal(dims))).astype(dtype)
    if dtype.kind in "iu" or shape.element_type[0] in "su":
        hi = 8 if shape.element_type not in ("s1", "u1", "s2", "u2", "s4") else 2
        return rng.integers(0, hi, size=dims).astype(np.int64).astype(dtype)
    return np.asarray(float_scale * rng.standard_normal(dims), np.float64).astype(dtype)


def random_arguments(module: Module, rng: np.random.Generator, float_scale: float = 1.0) -> list[Value]:
    return [random_value(p.shape, rng, float_scale) for p in module.entry.parameter_instructions()]


# ---------------------------------------------------------------------------
# Comparison
# ---------------------------------------------------------------------------


def _leaves(value: Value, path: tuple[int, ...] = ()) -> list[tuple[tuple[int, ...], Any]]:
    if isinstance(value, tuple):
        out: list[tuple[tuple[int, ...], Any]] = []
        for i, v in enumerate(value):
            out.extend(_leaves(v, (*path, i)))
        return out
    return [(path, value)]


def _fmt(x: Any) -> str:
    if isinstance(x, np.generic) and x.dtype.kind not in "iub":
        return repr(float(x)) if x.dtype.kind != "c" else repr(complex(x))
    return repr(x.item() if isinstance(x, np.generic) else x)


def _rtol(element_type: str) -> float:
    return FLOAT_TOLERANCE.get(element_type, _LOW_PRECISION_RTOL)


def module_tolerance(*modules: Module) -> float:
    """rtol of the least precise float type any instruction of ``modules`` produces."""
    from hlo.interpreter.values import COMPLEX_TYPES, FLOAT_TYPES

    worst = 0.0
    for module in modules:
        for comp in module.computations:
            for instr in comp.instructions:
                for _, leaf in leaf_arrays(instr.shape):
                    t = leaf.element_type
                    if t in FLOAT_TYPES or t in COMPLEX_TYPES:
                        worst = max(worst, _rtol(t))
    return worst


def compare_values(
    a: Value, b: Value, *, exact: bool, rtol: float = 0.0, trial: int = 0
) -> tuple[Difference | None, bool, float]:
    """(first difference or None, bit-exact?, max relative error) of two results."""
    la, lb = _leaves(a), _leaves(b)
    if [p for p, _ in la] != [p for p, _ in lb]:
        raise InterpretError("the two modules return differently structured results")
    all_exact, worst = True, 0.0
    for (path, x), (_, y) in zip(la, lb):
        if x is TOKEN or y is TOKEN:
            continue
        if x.shape != y.shape or x.dtype != y.dtype:
            raise InterpretError(
                f"output {{{','.join(map(str, path))}}}: {x.dtype}{list(x.shape)} vs {y.dtype}{list(y.shape)}"
            )
        floating = x.dtype.kind in "fcV" and x.dtype != np.bool_
        if floating:
            xw = x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)
            yw = y.astype(xw.dtype)
            same = (xw == yw) | (np.isnan(xw) & np.isnan(yw))
        else:
            xw, yw = x, y
            same = x == y
        if same.all():
            continue
        all_exact = False
        bad = ~same
        if floating and not exact:
            finite = np.isfinite(xw)
            scale = float(np.abs(xw[finite]).max(initial=0.0)) or 1.0
            err = np.abs(xw - yw)
            tol = max(rtol, _rtol(_element_type(x.dtype)))
            close = (err <= tol * scale) & finite & np.isfinite(yw)
            finite_err = err[np.isfinite(err)]
            if finite_err.size:
                worst = max(worst, float(finite_err.max()) / scale)
            bad = bad & ~close
        if bad.any():
            first = tuple(int(i) for i in np.unravel_index(int(np.flatnonzero(bad)[0]), x.shape))
            return (
                Difference(trial, path, first, _fmt(x[first]), _fmt(y[first]), int(bad.sum()), int(x.size)),
                False,
                worst,
            )
    return None, all_exact, worst


def _element_type(dtype: np.dtype) -> str:
    from hlo.interpreter.values import element_type_of

    return element_type_of(dtype)


def _verify(module: Module) -> tuple[str, tuple[str, ...]]:
    from hlo.layout_verifier import verify_layouts

    try:
        return "ran", tuple(str(v) for v in verify_layouts(module))
    except HloError as exc:
        return "ran", (str(exc),)


def _signature(module: Module) -> list[str]:
    return [
        p.shape.dims_text() if isinstance(p.shape, ArrayShape) else str(p.shape)
        for p in module.entry.parameter_instructions()
    ]


def compare_modules(
    original: Module, rewritten: Module, *, seed: int = 0, trials: int = 1, exact: bool = False
) -> EquivalenceReport:
    """Run both modules on the same random inputs and compare every output element.

    Raises :class:`InterpretError` when the modules cannot be compared (different
    parameter shapes) or cannot be executed.
    """
    if _signature(original) != _signature(rewritten):
        raise InterpretError(
            f"entry parameters differ: ({', '.join(_signature(original))}) vs "
            f"({', '.join(_signature(rewritten))})"
        )
    verifier, violations = _verify(rewritten)
    rtol = module_tolerance(original, rewritten)
    all_exact, worst = True, 0.0
    for trial in range(trials):
        rng = np.random.default_rng([seed, trial])
        args = random_arguments(original, rng)
        want = evaluate(original, args)
        got = evaluate(rewritten, args)
        diff, was_exact, err = compare_values(want, got, exact=exact, rtol=rtol, trial=trial)
        worst = max(worst, err)
        all_exact = all_exact and was_exact
        if diff is not None:
            return EquivalenceReport(False, False, seed, trials, diff, worst, violations, verifier)
    notes = () if all_exact else ("floats matched within tolerance, not bit for bit",)
    return EquivalenceReport(True, all_exact, seed, trials, None, worst, violations, verifier, notes)
