"""Semantic equivalence of two modules on random inputs.

``compare_modules(original, rewritten)`` draws random arguments for the entry parameters
(:mod:`hlo.random_inputs`: inside the domains of ``log``/``sqrt``/... where a parameter feeds one),
runs both modules through the reference interpreter and judges every output element.

The criterion. Let ``O`` be the original's output, ``R`` the rewritten module's, ``S`` the original
evaluated in f64 (its *shadow*, :func:`hlo.shadow.promote_floats`), and ``N1..Nk`` (k =
:data:`NOISY_RUNS`) the shadow with every float result multiplied by ``1 + u*r`` (``u`` the unit
roundoff of the type the original instruction computes in, ``r`` uniform in [-1, 1]): the rounding of
the original's precision made visible (:class:`hlo.shadow.Perturbation`). For each element:

- **identical** (``R == O`` bit for bit; NaN matches NaN): accepted. When every element of every
  trial is identical the shadow is never run and the report says "bit for bit".
- **float**, with ``spread = max_j |Nj - S|`` and ``own = |O - S|`` (the original's own error):
  accepted iff ``|R - S| <= max(OWN_FACTOR * own, SAFETY * spread) + SAFETY * u_out * |S| + tiny_out``,
  where ``OWN_FACTOR`` = :data:`OWN_FACTOR` (2), ``SAFETY`` = :data:`SAFETY` (8), ``u_out`` the unit
  roundoff of the output type and ``tiny_out`` its smallest normal number. The bound scales with the magnitudes that produced the element: a sum of
  large values that cancels to nearly zero has a large spread; a well-conditioned element has one of
  a few ulps. Computing in more precision than the original (bf16 -> f32) only brings ``R`` closer to
  ``S``; a reassociated sum moves ``R`` by about what rounding noise moves it.
- **undefined** (``S``, ``O`` or some ``Nj`` is NaN or infinite: an input left a function's domain,
  or a value overflowed): not judged, counted in ``unchecked``.
- **integer or pred**: must equal ``O``, unless ``O``, ``S`` and every ``Nj`` do not all agree on it
  (an ``argmax`` or a comparison decided by rounding): then not judged, counted in ``unchecked``.

**The f64 clause.** Where ``R`` and ``O`` differ, the rewritten module is also evaluated in f64
(``SR``, its own shadow) and must compute the same function as the original: ``|SR - S| <=
SAFETY * max(spread64, m * |S|) + SAFETY * 2**-53 * |S| + tiny64``, with ``spread64 = max_j |Ej - S|``
over :data:`NOISY_RUNS` runs of the original's shadow under
:meth:`hlo.shadow.Perturbation.exact_arithmetic` (f64 rounding everywhere, the original types'
rounding on constants and what is computed from them alone, and on the instructions that run at
their original types), and ``m`` the median of ``spread64 / |S|`` over the output (three runs can
all come out small in one element by chance). Integers: ``SR`` must equal ``S`` wherever every
``Ej`` does. Legitimate rewrites (reassociation, bf16 work done in f32, constants folded at the
original precision) leave the function in exact arithmetic unchanged, so ``SR`` stays within f64
noise of ``S`` however coarse the original's precision; a real change moves ``SR`` by its full
size even where bf16 rounding noise would hide it at the original's precision.

A moved, dropped or swapped value differs by the size of the values themselves, far outside the
bound wherever the computation is well conditioned. ``exact=True`` requires bit-identical floats.
If the shadow itself cannot run, floats fall back to ``|R - O| <= SAFETY * u * max|O|`` per output
(``u``: the largest unit roundoff either module computes in), and the report says so in ``notes``.

The rewritten module is also checked by the layout verifier (:mod:`hlo.layout_verifier`); its
violations are part of the report.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hlo.errors import HloError
from hlo.interpreter import DEFAULT_MEMORY_LIMIT, evaluate
from hlo.interpreter.budget import check_memory
from hlo.interpreter.values import TOKEN, InterpretError, Value, element_type_of
from hlo.ir import Module
from hlo.random_inputs import random_arguments, random_value
from hlo.shadow import F64_ROUNDOFF, Perturbation, promote_floats, unit_roundoff
from hlo.shape import ArrayShape, leaf_arrays

__all__ = [
    "FLOAT_TOLERANCE", "compare_normwise", "module_tolerance", "NOISY_RUNS", "OWN_FACTOR", "SAFETY", "Difference", "EquivalenceReport", "compare_modules", "compare_values",
    "random_arguments", "random_value",
]

#: Factor between the rounding noise observed in the shadow and the error a rewrite may add.
SAFETY = 8.0
#: How many times the original's own error (``|O - S|``) a rewrite may make.
OWN_FACTOR = 2.0
#: Perturbed shadow runs per trial.
NOISY_RUNS = 3


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
    shadow: str | None = None
    bound: float | None = None
    #: set when the element failed the f64 clause: the rewritten module's own f64 value
    rewritten_shadow: str | None = None

    def __str__(self) -> str:
        path = "{" + ",".join(map(str, self.output_index)) + "}"
        against = "" if self.shadow is None else f", f64 shadow {self.shadow}, allowed error {self.bound:.3g}"
        if self.rewritten_shadow is not None:
            against = (f"; in f64 the original gives {self.shadow}, the rewritten module "
                       f"{self.rewritten_shadow}, allowed difference {self.bound:.3g}")
        return (
            f"output {path} element [{','.join(map(str, self.element_index))}]: "
            f"original {self.original}, rewritten {self.rewritten}{against} "
            f"({self.mismatches} of {self.elements} elements differ, trial {self.trial})"
        )


@dataclass(frozen=True, slots=True)
class EquivalenceReport:
    equivalent: bool
    exact: bool
    seed: int
    trials: int
    difference: Difference | None = None
    #: largest |R - S| / allowed error over the judged float elements (<= 1 when equivalent).
    worst_ratio: float = 0.0
    violations: tuple[str, ...] = ()
    verifier: str = "unavailable"
    notes: tuple[str, ...] = field(default=())
    #: elements not judged (undefined in the shadow, or integers decided by rounding).
    unchecked: int = 0
    elements: int = 0
    #: largest |SR - S| / allowed difference of the f64 clause (<= 1 when equivalent).
    worst_f64_ratio: float = 0.0

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
            "worst_ratio": self.worst_ratio,
            "worst_f64_ratio": self.worst_f64_ratio,
            "elements": self.elements,
            "unchecked": self.unchecked,
            "first_difference": None if diff is None else {
                "trial": diff.trial,
                "output_index": list(diff.output_index),
                "element_index": list(diff.element_index),
                "original": diff.original,
                "rewritten": diff.rewritten,
                "shadow": diff.shadow,
                "allowed_error": diff.bound,
                "rewritten_shadow": diff.rewritten_shadow,
                "mismatches": diff.mismatches,
                "elements": diff.elements,
                "summary": str(diff),
            },
            "verifier": self.verifier,
            "violations": list(self.violations),
            "notes": list(self.notes),
        }


# ---------------------------------------------------------------------------
# Judging one pair of results
# ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Reference:
    """What the rewritten result is judged against: the f64 shadow and its perturbed runs.

    ``shadow`` is ``None`` when the shadow could not run; ``roundoff`` is then the unit roundoff of
    the normwise fallback rule.
    """

    shadow: Value | None
    noisy: tuple[Value, ...] = ()
    roundoff: float = 0.0
    #: the rewritten module's own f64 shadow and the original's shadow under
    #: :meth:`Perturbation.exact_arithmetic` (absent when there is no rewritten module to shadow).
    rewritten_shadow: Value | None = None
    exact_noisy: tuple[Value, ...] = ()


@dataclass
class _Tally:
    worst: float = 0.0
    unchecked: int = 0
    elements: int = 0
    worst_f64: float = 0.0


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


def _wide(x: np.ndarray) -> np.ndarray:
    return x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)


def _floating(x: np.ndarray) -> bool:
    return x.dtype.kind in "fcV" and x.dtype != np.bool_


def _identical(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if _floating(x):
        xw, yw = _wide(x), _wide(y)
        return (xw == yw) | (np.isnan(xw) & np.isnan(yw))
    return x == y


def _noise(sw: np.ndarray, noisy) -> tuple[np.ndarray, np.ndarray]:
    """(undefined, spread) per element: where the shadow ``sw`` or a perturbed run of it is
    not finite, and how far the perturbed runs ``noisy`` move from it at most."""
    undefined = ~np.isfinite(sw)
    spread = np.zeros(sw.shape)
    for n in noisy:
        nw = _wide(n)
        undefined |= ~np.isfinite(nw)
        with np.errstate(invalid="ignore"):
            spread = np.fmax(spread, np.abs(nw - sw))
    return undefined, spread


def _judge_float(x, y, s, noisy, reference: Reference) -> tuple[np.ndarray, ...]:
    """(accepted, undefined, error / bound, bound) per element of one float output."""
    xw, yw = _wide(x), _wide(y)
    u_out = unit_roundoff(element_type_of(x.dtype))
    tiny = float(np.finfo(np.float64).tiny) if x.dtype.kind == "c" else _tiny(x.dtype)
    if s is None:  # normwise fallback
        finite = np.isfinite(xw)
        scale = float(np.abs(xw[finite]).max(initial=0.0)) or 1.0
        bound = np.full(x.shape, SAFETY * max(reference.roundoff, u_out) * scale + tiny)
        undefined = ~finite
        err = np.abs(yw - xw)
    else:
        sw = _wide(s)
        undefined, spread = _noise(sw, noisy)
        undefined |= ~np.isfinite(xw)
        with np.errstate(invalid="ignore"):
            own = np.abs(xw - sw)
            bound = np.fmax(OWN_FACTOR * own, SAFETY * spread) + SAFETY * u_out * np.abs(sw) + tiny
            err = np.abs(yw - sw)
    with np.errstate(invalid="ignore"):
        accepted = _identical(x, y) | undefined | (err <= bound)
        if s is not None:  # NaN/inf where the original's precision does not even fix the sign
            accepted |= ~np.isfinite(yw) & (SAFETY * spread >= np.abs(sw))
        ratio = np.where(undefined, 0.0, err / bound)
    return accepted, undefined, np.nan_to_num(ratio, nan=np.inf), bound


def _tiny(dtype: np.dtype) -> float:
    import ml_dtypes

    try:
        return float(ml_dtypes.finfo(dtype).tiny)
    except ValueError:
        return float(np.finfo(np.float64).tiny)


def compare_values(
    a: Value, b: Value, *, exact: bool = False, reference: Reference | None = None, trial: int = 0,
    tally: _Tally | None = None,
) -> Difference | None:
    """The first element where ``b`` (rewritten) is not accepted against ``a`` (original), or None.

    Without a ``reference`` only identical elements are accepted.
    """
    tally = tally if tally is not None else _Tally()
    la, lb = _leaves(a), _leaves(b)
    if [p for p, _ in la] != [p for p, _ in lb]:
        raise InterpretError("the two modules return differently structured results")
    ls = _leaves(reference.shadow) if reference is not None and reference.shadow is not None else None
    lns = [_leaves(n) for n in reference.noisy] if reference is not None else []
    for k, ((path, x), (_, y)) in enumerate(zip(la, lb)):
        if x is TOKEN or y is TOKEN:
            continue
        if x.shape != y.shape or x.dtype != y.dtype:
            raise InterpretError(
                f"output {{{','.join(map(str, path))}}}: {x.dtype}{list(x.shape)} vs {y.dtype}{list(y.shape)}"
            )
        tally.elements += int(x.size)
        same = _identical(x, y)
        if same.all():
            continue
        s = ls[k][1] if ls is not None else None
        noisy = [n[k][1] for n in lns]
        bound = None
        if exact or reference is None:
            bad = ~same
        elif _floating(x):
            accepted, undefined, ratio, bound = _judge_float(x, y, s, noisy, reference)
            bad = ~accepted
            tally.unchecked += int((undefined & ~same).sum())
            judged = ratio[~undefined & ~same]
            if judged.size:
                tally.worst = max(tally.worst, float(judged.max()))
        else:
            unstable = np.zeros(x.shape, bool) if s is None else ~_identical(x, s)
            for n in noisy:
                unstable |= ~_identical(s, n)
            bad = ~same & ~unstable
            tally.unchecked += int((unstable & ~same).sum())
        if bad.any():
            first = tuple(int(i) for i in np.unravel_index(int(np.flatnonzero(bad)[0]), x.shape))
            return Difference(
                trial, path, first, _fmt(x[first]), _fmt(y[first]), int(bad.sum()), int(x.size),
                None if s is None else _fmt(s[first]), None if bound is None else float(bound[first]),
            )
        if not exact and reference is not None and reference.rewritten_shadow is not None and s is not None:
            diff = _judge_exact_arithmetic(x, y, s, k, reference, trial, path, ~same, tally)
            if diff is not None:
                return diff
    return None


def _judge_exact_arithmetic(x, y, s, k: int, reference: Reference, trial: int, path, differing, tally: _Tally):
    """The f64 clause: where O and R differ, the rewritten module's own f64 shadow ``SR`` must agree
    with the original's ``S`` within the noise of :meth:`Perturbation.exact_arithmetic`."""
    sr = _leaves(reference.rewritten_shadow)[k][1]
    noisy = [_leaves(n)[k][1] for n in reference.exact_noisy]
    if _floating(x):
        sw, rw = _wide(s), _wide(sr)
        undefined, spread = _noise(sw, noisy)
        with np.errstate(invalid="ignore", divide="ignore"):
            # Three runs may all come out small in one element by chance: the output's median
            # relative noise is a floor for every element (one ill-conditioned element does not move it).
            relative = (spread / np.abs(sw))[~undefined & (sw != 0)]
            floor = float(np.median(relative)) * np.abs(sw) if relative.size else 0.0
            bound = (SAFETY * np.fmax(spread, floor) + SAFETY * F64_ROUNDOFF * np.abs(sw)
                     + float(np.finfo(np.float64).tiny))
            bad = differing & ~undefined & ~_identical(sw, rw) & ~(np.abs(rw - sw) <= bound)
            judged = (np.abs(rw - sw) / bound)[differing & ~undefined]
        if judged.size:
            tally.worst_f64 = max(tally.worst_f64, float(np.nan_to_num(judged, nan=np.inf).max()))
    else:
        stable = np.ones(x.shape, bool)
        for n in noisy:
            stable &= _identical(s, n)
        bad, bound = differing & stable & ~_identical(s, sr), None
    if not bad.any():
        return None
    first = tuple(int(i) for i in np.unravel_index(int(np.flatnonzero(bad)[0]), x.shape))
    return Difference(
        trial, path, first, _fmt(x[first]), _fmt(y[first]), int(bad.sum()), int(x.size), _fmt(s[first]),
        None if bound is None else float(bound[first]), _fmt(sr[first]),
    )


# ---------------------------------------------------------------------------
# Running the modules
# ---------------------------------------------------------------------------


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


def _widest_roundoff(*modules: Module) -> float:
    return max(
        (unit_roundoff(leaf.element_type) for m in modules for c in m.computations
         for i in c.instructions for _, leaf in leaf_arrays(i.shape)),
        default=0.0,
    )


class _Shadow:
    """The original's f64 shadow, built on first use; ``failure`` says why it could not run."""

    def __init__(
        self, original: Module, rewritten: Module, seed: int, memory_limit: int, noise_scale: float = 1.0,
        rewritten_shadow: bool = False,
    ) -> None:
        self.original, self.rewritten, self.seed = original, rewritten, seed
        self.memory_limit = memory_limit
        self.noise_scale = noise_scale
        self.module: Module | None = None
        self.failure: str | None = None
        #: whether to shadow the rewritten module too (the f64 clause); why it could not run
        self.with_rewritten = rewritten_shadow
        self.rewritten_failure: str | None = None

    def reference(self, args: list[Value], trial: int) -> Reference:
        if self.failure is None:
            try:
                if self.module is None:
                    self.module = promote_floats(self.original)
                wide = [_promote_value(a) for a in args]
                shadow = evaluate(self.module, wide, memory_limit=self.memory_limit)
                noisy = tuple(
                    evaluate(self.module, wide, memory_limit=self.memory_limit, perturb=Perturbation.of(
                        self.original, np.random.default_rng([self.seed, trial, 1 + j]), self.noise_scale))
                    for j in range(NOISY_RUNS)
                )
                return Reference(shadow, noisy, 0.0, *self._exact_arithmetic(self.module, wide, trial))
            except HloError as exc:
                self.failure = exc.message
        return Reference(None, (), _widest_roundoff(self.original, self.rewritten))

    def _exact_arithmetic(self, shadow: Module, wide: list[Value], trial: int) -> tuple[Value | None, tuple[Value, ...]]:
        """The rewritten module's f64 shadow and the original's under exact-arithmetic noise."""
        if not self.with_rewritten or self.rewritten_failure is not None:
            return None, ()
        try:
            rewritten = evaluate(promote_floats(self.rewritten), wide, memory_limit=self.memory_limit)
        except HloError as exc:
            self.rewritten_failure = exc.message
            return None, ()
        try:
            noisy = tuple(
                evaluate(shadow, wide, memory_limit=self.memory_limit, perturb=Perturbation.exact_arithmetic(
                    self.original, np.random.default_rng([self.seed, trial, 1 + NOISY_RUNS + j])))
                for j in range(NOISY_RUNS)
            )
        except HloError as exc:
            self.rewritten_failure = exc.message
            return None, ()
        return rewritten, noisy


def _promote_value(value: Value) -> Value:
    if isinstance(value, tuple):
        return tuple(_promote_value(v) for v in value)
    if isinstance(value, np.ndarray) and _floating(value):
        return _wide(value)  # bf16 and the fp8 family too (numpy kind 'V')
    return value


def compare_modules(
    original: Module, rewritten: Module, *, seed: int = 0, trials: int = 1, exact: bool = False,
    memory_limit: int = DEFAULT_MEMORY_LIMIT, f64_clause: bool = True,
) -> EquivalenceReport:
    """Run both modules on the same random inputs and judge every output element (module docstring).

    ``f64_clause=False`` leaves the f64 clause out (the criterion at the original's precision
    alone: weaker; for measuring what the clause costs and catches).

    Raises :class:`InterpretError` when the modules cannot be compared (different
    parameter shapes) or cannot be executed, and :class:`MemoryBudgetError` before any input is
    drawn when either module's buffers may exceed ``memory_limit`` bytes.
    """
    check_memory(original, memory_limit)
    check_memory(rewritten, memory_limit)
    try:
        return _compare(original, rewritten, seed, trials, exact, memory_limit, f64_clause)
    except MemoryError:
        raise InterpretError(
            f"this machine ran out of memory running the modules (memory budget {memory_limit} bytes): "
            "lower the budget to be refused before allocating"
        ) from None


def _compare(
    original: Module, rewritten: Module, seed: int, trials: int, exact: bool, memory_limit: int,
    f64_clause: bool = True,
) -> EquivalenceReport:
    if _signature(original) != _signature(rewritten):
        raise InterpretError(
            f"entry parameters differ: ({', '.join(_signature(original))}) vs "
            f"({', '.join(_signature(rewritten))})"
        )
    verifier, violations = _verify(rewritten)
    shadow = _Shadow(original, rewritten, seed, memory_limit, rewritten_shadow=f64_clause)
    tally = _Tally()
    all_exact = True
    for trial in range(trials):
        args = random_arguments(original, np.random.default_rng([seed, trial]))
        want = evaluate(original, args, memory_limit=memory_limit)
        got = evaluate(rewritten, args, memory_limit=memory_limit)
        if compare_values(want, got, exact=True, trial=trial, tally=_Tally()) is None:
            tally.elements += _count(want)
            continue
        all_exact = False
        reference = None if exact else shadow.reference(args, trial)
        diff = compare_values(want, got, exact=exact, reference=reference, trial=trial, tally=tally)
        if diff is not None:
            return EquivalenceReport(
                False, False, seed, trials, diff, tally.worst, violations, verifier, _notes(shadow, tally),
                tally.unchecked, tally.elements, tally.worst_f64,
            )
    notes = _notes(shadow, tally) + (() if all_exact else ("floats matched within the bound, not bit for bit",))
    return EquivalenceReport(
        True, all_exact, seed, trials, None, tally.worst, violations, verifier, notes, tally.unchecked,
        tally.elements, tally.worst_f64,
    )


def _count(value: Value) -> int:
    return sum(int(v.size) for _, v in _leaves(value) if isinstance(v, np.ndarray))


def _notes(shadow: _Shadow, tally: _Tally) -> tuple[str, ...]:
    notes = []
    if shadow.failure is not None:
        notes.append(f"no f64 shadow ({shadow.failure}): floats judged normwise against the original")
    if shadow.rewritten_failure is not None:
        notes.append(f"no f64 shadow of the rewritten module ({shadow.rewritten_failure}): "
                     "the f64 clause was not applied")
    if tally.unchecked:
        notes.append(
            f"{tally.unchecked} of {tally.elements} element(s) not judged: undefined in the shadow "
            "(NaN/inf: an input left a function's domain) or decided by rounding"
        )
    return tuple(notes)


# ---------------------------------------------------------------------------
# Normwise comparison of two executions that have no shadow (e.g. two XLA runs)
# ---------------------------------------------------------------------------

#: rtol per float element type for :func:`compare_normwise`.
FLOAT_TOLERANCE: dict[str, float] = {
    "f64": 1e-9, "c128": 1e-9, "f32": 1e-4, "c64": 1e-4, "f16": 1e-2, "bf16": 5e-2,
}
_LOW_PRECISION_RTOL = 0.25  # fp8/fp4


def _rtol(element_type: str) -> float:
    return FLOAT_TOLERANCE.get(element_type, _LOW_PRECISION_RTOL)


def module_tolerance(*modules: Module) -> float:
    """rtol of the least precise float type any instruction of ``modules`` produces."""
    worst = 0.0
    for module in modules:
        for comp in module.computations:
            for instr in comp.instructions:
                for _, leaf in leaf_arrays(instr.shape):
                    if unit_roundoff(leaf.element_type):
                        worst = max(worst, _rtol(leaf.element_type))
    return worst


def compare_normwise(a: Value, b: Value, *, rtol: float = 0.0, trial: int = 0) -> tuple[Difference | None, bool, float]:
    """(first difference, bit-exact?, max normwise error) with ``|a - b| <= rtol * max|a|`` per output.

    For two executions of which neither is a reference in higher precision (XLA against XLA);
    :func:`compare_modules` judges against the f64 shadow instead.
    """
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
        same = _identical(x, y)
        if same.all():
            continue
        all_exact = False
        bad = ~same
        if _floating(x):
            xw, yw = _wide(x), _wide(y)
            finite = np.isfinite(xw)
            scale = float(np.abs(xw[finite]).max(initial=0.0)) or 1.0
            err = np.abs(xw - yw)
            tol = max(rtol, _rtol(element_type_of(x.dtype)))
            bad &= ~((err <= tol * scale) & finite & np.isfinite(yw))
            finite_err = err[np.isfinite(err)]
            if finite_err.size:
                worst = max(worst, float(finite_err.max()) / scale)
        if bad.any():
            first = tuple(int(i) for i in np.unravel_index(int(np.flatnonzero(bad)[0]), x.shape))
            return (Difference(trial, path, first, _fmt(x[first]), _fmt(y[first]), int(bad.sum()), int(x.size)),
                    False, worst)
    return None, all_exact, worst


#: Noise scale for judging a compiled execution: XLA:CPU evaluates tanh, exp, log... with
#: polynomial approximations accurate to a few ulps, not to the correctly rounded result.
COMPILED_NOISE_SCALE = 4.0


def compare_outputs(
    original: Module, args: list[Value], got: Value, *, seed: int = 0,
    memory_limit: int = DEFAULT_MEMORY_LIMIT, noise_scale: float = COMPILED_NOISE_SCALE,
) -> EquivalenceReport:
    """Judge ``got`` (e.g. XLA's execution of ``original`` on ``args``) as :func:`compare_modules`
    judges a rewritten module's output: against the interpreter's run of ``original`` and its f64
    shadow, whose rounding noise is ``noise_scale`` times the unit roundoff."""
    check_memory(original, memory_limit)
    want = evaluate(original, args, memory_limit=memory_limit)
    tally = _Tally()
    if compare_values(want, got, exact=True, tally=tally) is None:
        return EquivalenceReport(True, True, seed, 1, elements=tally.elements)
    tally = _Tally()
    shadow = _Shadow(original, original, seed, memory_limit, noise_scale)
    diff = compare_values(want, got, reference=shadow.reference(list(args), 0), tally=tally)
    return EquivalenceReport(
        diff is None, False, seed, 1, diff, tally.worst, (), "not run", _notes(shadow, tally),
        tally.unchecked, tally.elements,
    )
