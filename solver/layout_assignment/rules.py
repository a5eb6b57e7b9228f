"""Backend operand preferences and hard rules (dot, convolution, reduce, fft, sort).

The target's ``op_rules`` say *what* a backend wants; this module says what that
means for a given instruction and candidate, and prices a miss as the
transpose the backend would do internally (:meth:`CostModel.conversion` from
the candidate to the preferred layout). A hard rule miss is reported as such;
the model turns it into FORBIDDEN, the scorer charges it and lists it.

Roles: ``("operand", k)`` is the layout the instruction reads operand ``k`` in;
``("result", ())`` the layout it writes.

Example (gpu, f16 2-D convolution ``b01f_01io->b01f``): the preferred lhs
order is NHWC, major to minor ``b, 0, 1, f``, i.e. ``minor_to_major`` = ``{3,2,1,0}``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from hlo.ir import ConvDimLabels, Instruction
from hlo.shape import ArrayShape, default_layout, element_bytes, minor_to_major_from_major_to_minor
from hlo.target import OpRule
from hlo.tiling import physical_size_bytes
from solver.layout_assignment.costs import FRACTAL_Z, NC1HWC0, Candidate, CostModel

__all__ = ["Preference", "RuleView", "naive_loop", "preference", "preferred_candidates", "rule_op"]

_INT8_FP8 = ("s8", "u8")


@dataclass(frozen=True, slots=True)
class Preference:
    ns: int
    hard: bool
    reason: str


@dataclass(frozen=True, slots=True)
class RuleView:
    """What the rules need to know about one instruction."""

    op: str
    role: str
    index: int
    element_type: str
    dims_info: tuple


def _dims(value: object) -> tuple[int, ...]:
    if value is None:
        return ()
    return (value,) if isinstance(value, int) else tuple(value)


def rule_op(instr: Instruction) -> str | None:
    """The op name the target's rules use for ``instr`` (cuDNN calls count as convolutions)."""
    if instr.opcode in ("dot", "convolution", "reduce", "reduce-window", "fft", "sort"):
        return instr.opcode
    if instr.opcode == "custom-call":
        target = getattr(instr.attr("custom_call_target"), "text", "")
        if target.startswith("__cudnn$conv") and isinstance(instr.attr("dim_labels"), ConvDimLabels):
            return "convolution"
    return None


def _applies(rule: OpRule, element_type: str, spatial: int | None, operand: int | None) -> bool:
    if rule.element_types and element_type not in rule.element_types:
        return False
    if rule.spatial_dims and (spatial is None or spatial not in rule.spatial_dims):
        return False
    return not (rule.operands and operand is not None and operand not in rule.operands)


def _m2m(order: list[int]) -> Candidate:
    return Candidate(minor_to_major_from_major_to_minor(order))


def _dot_groups(instr: Instruction, k: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    side = "lhs" if k == 0 else "rhs"
    return _dims(instr.attr(f"{side}_batch_dims")), _dims(instr.attr(f"{side}_contracting_dims"))


def dot_forms(instr: Instruction, k: int, ranks: tuple[int, int, int]
              ) -> tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]:
    """The physical forms a dot runs fastest in, as ``(operand k's minor_to_major, the
    result's)`` pairs: the nn form (the lhs with its contracting dims minor, the rhs with its
    free dims minor, the result row-major) and, where the result's free dims can swap, its
    mirror image (the product transposed, ``C^T = B^T A^T``: the lhs with its free dims
    minor, the rhs with its contracting dims minor, the result's rhs-free dims major to its
    lhs-free ones). XLA:CPU hands both to the same column-major kernel (measured: ``ccc``
    0.96-1.05x ``rrr``; a form with one operand off as fast as that operand off the other
    orientation, bench/dot_forms.py).
    ``ranks``: the lhs's, the rhs's and the result's."""
    batch, contracting = _dot_groups(instr, k)
    free = [d for d in range(ranks[k]) if d not in batch and d not in contracting]
    nb, result_rank = len(batch), ranks[2]
    # The result's dims: batch, then the lhs's free dims, then the rhs's.
    n_lhs = ranks[0] - nb - len(_dot_groups(instr, 0)[1])
    row_result = list(range(result_rank))
    mirror_result = [*range(nb), *range(nb + n_lhs, result_rank), *range(nb, nb + n_lhs)]
    row = [*batch, *free, *contracting] if k == 0 else [*batch, *contracting, *free]
    mirror = [*batch, *contracting, *free] if k == 0 else [*batch, *free, *contracting]
    forms = [(_m2m(row).minor_to_major, _m2m(row_result).minor_to_major)]
    if mirror_result != row_result:
        forms.append((_m2m(mirror).minor_to_major, _m2m(mirror_result).minor_to_major))
    return tuple(forms)


def dot_nn_rule(cm: CostModel, element_type: str, k: int) -> OpRule | None:
    """The target's ``dot_nn`` rule that applies to operand ``k`` of ``element_type``
    (None: the target prices no dot form there)."""
    return next((r for r in cm.target.rules_for("dot")
                 if r.kind == "dot_nn" and _applies(r, element_type, None, k)), None)


def _conv_orders(labels: ConvDimLabels, role: str, k: int, layout: str) -> Candidate | None:
    if role == "operand" and k == 0:
        b, f, s = labels.input_batch, labels.input_feature, list(labels.input_spatial)
    elif role == "operand" and k == 1:
        b, f, s = labels.kernel_output_feature, labels.kernel_input_feature, list(labels.kernel_spatial)
    elif role == "result":
        b, f, s = labels.output_batch, labels.output_feature, list(labels.output_spatial)
    else:
        return None
    return _m2m([b, *s, f] if layout == "NHWC" else [b, f, *s])


def _valid_dot_operand(cand: Candidate, batch: tuple[int, ...], contracting: tuple[int, ...],
                       rank: int) -> bool:
    """Batch dims most major and in their listed order, contracting and non-contracting
    groups each contiguous. The listed order matters: the i-th batch dims of the two
    operands pair up, and the library walks them as one collapsed batch dimension, so
    both operands must lay them out in the same (the listed) order."""
    m2m = list(reversed(cand.minor_to_major))
    if batch and m2m[: len(batch)] != list(batch):
        return False
    rest = m2m[len(batch):]
    free = [d for d in range(rank) if d not in batch and d not in contracting]
    for group in (contracting, free):
        if group:
            at = sorted(rest.index(d) for d in group)
            if at[-1] - at[0] != len(group) - 1:
                return False
    return True


def _conv_labels(instr: Instruction) -> ConvDimLabels | None:
    labels = instr.attr("dim_labels")
    return labels if isinstance(labels, ConvDimLabels) else None


def preferred_candidates(cm: CostModel, instr: Instruction, role: str, k: int,
                         shape: ArrayShape, combiner: str = "",
                         ranks: tuple[int, ...] = ()) -> list[Candidate]:
    """Layouts the target's rules name for this operand/result (deterministic order;
    ``combiner``: a reduce's combiner opcode; ``ranks``: a dot's lhs, rhs and result
    ranks)."""
    op = rule_op(instr)
    if op is None or shape.rank == 0:
        return []
    labels = _conv_labels(instr) if op == "convolution" else None
    spatial = len(labels.input_spatial) if labels is not None else None
    out: list[Candidate] = []
    for rule in cm.target.rules_for(op):
        if _applies(rule, shape.element_type, spatial, k if role == "operand" else None):
            out.extend(preferred_candidates_for_rule(cm, instr, role, k, shape, rule, labels,
                                                     combiner, ranks))
    return list(dict.fromkeys(out))


def preference(cm: CostModel, instr: Instruction, role: str, k: int, shape: ArrayShape,
               cand: Candidate, flops: int = 0, combiner: str = "",
               ranks: tuple[int, ...] = (), chained: bool = False) -> Preference | None:
    """The cost (and hardness) of reading/writing ``shape`` as ``cand`` for ``instr``
    (``flops``: a convolution's or a dot's, for a backend that runs other layouts as a naive
    loop or a rule priced ``ns_per_flop``: a slower kernel rather than a transpose first;
    ``combiner``: a reduce's combiner opcode, whether its loop is vectorized; ``chained``: a
    convolution operand whose naive loop the graph's ``conv_naive`` relation prices,
    :func:`naive_loop`)."""
    op = rule_op(instr)
    if op is None or shape.rank == 0:
        return None
    total, hard, reasons = 0, False, []
    etype = shape.element_type
    labels = _conv_labels(instr) if op == "convolution" else None
    spatial = len(labels.input_spatial) if labels is not None else None
    here = cm.laid_out(shape, cand)

    def miss(rule: OpRule, want: Candidate, why: str) -> None:
        nonlocal total, hard
        per_flop = _per_flop(rule, role)
        if per_flop is not None and flops:
            # Not a transpose the backend does first: the op itself runs slower (a naive
            # loop, a slower kernel), priced by its work.
            total += int(flops * per_flop[0])
            hard = hard or rule.hard
            reasons.append(_per_flop_reason(rule, op, why, flops, per_flop))
            return
        ns, _ = (cm.conversion(here, cand.format, cm.laid_out(shape, want), want.format)
                 if role == "operand" else
                 cm.conversion(cm.laid_out(shape, want), want.format, here, cand.format))
        # +1: with equal byte counts an explicit copy wins, since one copy can serve
        # several readers while the backend's internal transpose is redone per use.
        ns = int(ns * float(rule.params.get("cost_factor", 1.0))) + 1
        total += ns
        hard = hard or rule.hard
        reasons.append(f"{why} ({'hard' if rule.hard else 'preference'}: {rule.note or rule.kind})")

    for rule in cm.target.rules_for(op):
        if not _applies(rule, etype, spatial, k if role == "operand" else None) or (
                chained and _naive(rule, op)):
            continue
        prefs = preferred_candidates_for_rule(cm, instr, role, k, shape, rule, labels, combiner,
                                              ranks)
        if rule.kind == "dot_batch_not_most_minor" and op == "dot":
            batch = _dims(instr.attr("lhs_batch_dims")) if role == "result" else _dot_groups(instr, k)[0]
            bad = bool(batch) and cand.minor_to_major[0] in (
                range(len(batch)) if role == "result" else batch)
            if bad and prefs:
                miss(rule, prefs[0], "batch dim most minor")
            elif bad:
                miss(rule, Candidate(default_layout(shape.rank).minor_to_major), "batch dim most minor")
        elif rule.kind == "dot_batch_most_major" and op == "dot":
            batch = (tuple(range(len(_dims(instr.attr("lhs_batch_dims")))))
                     if role == "result" else _dot_groups(instr, k)[0])
            # In order: XLA:CPU accepts batch dims most major in another order and then
            # computes wrong numbers (measured), so the order is part of the rule.
            if batch and tuple(reversed(cand.minor_to_major[-len(batch):])) != tuple(batch):
                miss(rule, prefs[0], "batch dims not most major in order")
        elif rule.kind == "dot_groups_contiguous" and op == "dot" and role == "operand":
            batch, contracting = _dot_groups(instr, k)
            if not _valid_dot_operand(cand, batch, contracting, shape.rank):
                miss(rule, prefs[0], "dim groups not contiguous")
        elif rule.kind == "dot_contracting_most_minor" and op == "dot" and role == "operand":
            _, contracting = _dot_groups(instr, k)
            if contracting and set(cand.minor_to_major[: len(contracting)]) != set(contracting):
                miss(rule, prefs[0], "contracting dims not most minor")
        elif rule.kind in ("window_minor", "reduction_minor"):
            extra, why = _measured_extra(cm, instr, role, shape, here, rule, combiner)
            if extra:
                total += extra
                reasons.append(f"{why} ({rule.note or rule.kind})")
        elif rule.kind == "dot_nn" and role == "operand" and ranks:
            pass  # with the result's layout: the graph's dot_form relation prices it
        elif prefs and cand not in prefs:
            miss(rule, prefs[0], f"not {prefs[0]}")
    if not reasons:
        return None
    return Preference(total, hard, "; ".join(reasons))


def _naive(rule: OpRule, op: str) -> bool:
    """Whether missing ``rule`` makes the whole convolution run as a naive loop (one loop,
    whichever of its arrays misses), not a slower kernel or a transpose per array."""
    return op == "convolution" and "naive_ns_per_flop" in rule.params


def naive_loop(cm: CostModel, instr: Instruction, role: str, k: int, shape: ArrayShape,
               cand: Candidate, flops: int) -> tuple[int, str]:
    """``(ns, why)`` where convolution ``instr`` read (``role='operand'``, ``k``) or written
    (``'result'``) as ``cand`` misses a rule whose miss runs it as a naive loop
    (``naive_ns_per_flop``: ``flops`` x that); ``(0, "")`` where it does not."""
    op = rule_op(instr)
    if op != "convolution" or shape.rank == 0:
        return 0, ""
    labels = _conv_labels(instr)
    spatial = len(labels.input_spatial) if labels is not None else None
    for rule in cm.target.rules_for(op):
        if not _naive(rule, op) or not _applies(rule, shape.element_type, spatial,
                                                k if role == "operand" else None):
            continue
        prefs = preferred_candidates_for_rule(cm, instr, role, k, shape, rule, labels)
        per_flop = _per_flop(rule, role)
        if prefs and cand not in prefs and per_flop is not None:
            return int(flops * per_flop[0]), _per_flop_reason(rule, op, f"not {prefs[0]}",
                                                              flops, per_flop)
    return 0, ""


def _per_flop_reason(rule: OpRule, op: str, why: str, flops: int,
                     per_flop: tuple[float, str]) -> str:
    return (f"{why}: the {op} runs {per_flop[1]}, {flops} flops x {per_flop[0]:g} ns "
            f"({rule.note or rule.kind})")


def _measured_extra(cm: CostModel, instr: Instruction, role: str, shape: ArrayShape,
                    here: ArrayShape, rule: OpRule, combiner: str) -> tuple[int, str]:
    """``(extra ns, why)`` of a measured per-op term: a reduce-window's result
    (``window_minor``) or a reduce's operand (``reduction_minor``) in its slow form."""
    if rule.kind == "window_minor" and instr.opcode == "reduce-window" and role == "result":
        return _windowed_minor(instr, shape, here, rule)
    if rule.kind == "reduction_minor" and instr.opcode == "reduce" and role == "operand":
        return _slow_reduction(cm, instr, shape, here, rule, combiner)
    return 0, ""


def _per_flop(rule: OpRule, role: str = "operand") -> tuple[float, str] | None:
    """``(ns per flop, how the op runs)`` where a miss of ``rule`` is priced by the op's
    flops: ``naive_ns_per_flop`` (the backend falls back to a naive loop) or ``ns_per_flop``
    (a slower kernel; ``result_ns_per_flop`` instead where the result misses, when given);
    ``None`` where it is priced as the transpose to the wanted layout."""
    if role == "result" and "result_ns_per_flop" in rule.params:
        return float(rule.params["result_ns_per_flop"]), "a slower kernel"
    for key, how in (("naive_ns_per_flop", "as a naive loop"), ("ns_per_flop", "a slower kernel")):
        if key in rule.params:
            return float(rule.params[key]), how
    return None


def _slow_reduction(cm: CostModel, instr: Instruction, shape: ArrayShape, here: ArrayShape,
                    rule: OpRule, combiner: str = "") -> tuple[int, str]:
    """``(extra ns, why)`` of a reduce reading ``here``: when its most-minor non-trivial dim
    is ``kept`` or ``reduced`` as the rule's ``slow`` says (``read_factor`` passes over the
    operand), or, in the other form, when that dim is not the first one listed
    (:func:`_misordered_reduction`)."""
    reduced = set(_dims(instr.attr("dimensions")))
    order = [d for d in here.effective_layout().minor_to_major if shape.dims[d] != 1]
    if not order or not reduced or len(reduced) == len(order) and set(order) <= reduced:
        return 0, ""
    form = "reduced" if order[0] in reduced else "kept"
    if form != rule.params.get("slow", "kept"):
        return _misordered_reduction(cm, instr, shape, here, order, rule, combiner)
    extent = 1
    for d in reduced:
        extent *= shape.dims[d]
    # A variadic reduce (argmax: its combiner returns a tuple) is never vectorized by
    # XLA:CPU ("vectorization of variadic reduce not implemented"); its column form turns
    # slow at its own extent, ``variadic_min_extent`` (0: at any extent). Measured with the
    # combiner jnp.argmax lowers to, 1-2 MiB: column / copy-and-row 0.40-0.72 reading 8 or 16
    # elements per result, 1.18-1.82 from 32 (gen_reduce_heavy's argmax over 32 elements
    # 64 KiB apart: 1.8-2.2x XLA's time read in place).
    key = "variadic_min_extent" if combiner == "tuple" else "min_extent"
    min_extent = int(rule.params.get(key, 0))
    if form == "kept" and extent < min_extent:
        return 0, ""  # each result element reads few strided elements: they stay in cache
    # The rows one result element of a variadic column reduction reads are read again by the
    # results beside it: the form runs as fast as the row one while those rows span fewer than
    # ``variadic_min_span`` bytes (measured, argmax over 32 elements of 1 MiB in three runs:
    # column / row 0.99-1.16 spanning 8-64 KiB, 1.69-2.37 from 128 KiB).
    min_span = int(rule.params.get("variadic_min_span", 0)) if combiner == "tuple" else 0
    if form == "kept" and min_span and extent * _column_stride(here, order, reduced) < min_span:
        return 0, ""
    factor = float(rule.params.get("read_factor", 0.0))
    stride_note = ""
    nbytes = physical_size_bytes(here)
    column = form == "kept" and ("wide_factor" in rule.params or "stride_passes" in rule.params)
    if column:
        stride = _column_stride(here, order, reduced)
        factor = _column_passes(rule, stride, nbytes)
        stride_note = f", reading {stride} bytes apart"
        scale = _size_scale(rule, nbytes)
        if scale != 1.0:
            stride_note += f" (x{scale:.2g} for an operand of {nbytes} bytes)"
    scalar = ""
    if combiner in rule.params.get("scalar", ()):
        # The column form runs the same for every combiner; the row form is fast only where
        # LLVM vectorizes it, so against a scalar row form the column one pays less.
        factor = max(0.0, factor - float(rule.params.get("scalar_factor", 0.0)))
        scalar = f", less the passes a scalar {combiner} row reduction pays itself"
    why = (f"the reduce's physically minor dim is {form}, the slow form"
           + (f" (each result element reads >= {min_extent} elements)" if min_extent else "")
           + f"{stride_note}{scalar}: +{factor:.3g} pass(es) over the operand")
    if column:
        # A column reduction's extra time is its reads' misses, not bandwidth: measured in
        # passes at the cache's bandwidth, it grows 1-2x from 1 to 8 MiB of operand while a
        # pass at the memory's bandwidth is 11x one at the cache's (extra ns per element at
        # 128, 512, 2048 bytes apart: 0.95, 2.08, 2.99 over 1 MiB; 1.07-1.37, 2.19-2.33,
        # 6.34-7.04 over 4 MiB; 2.28, 3.12, 6.66 over 8 MiB).
        return int(factor * cm.target.cache_pass_ns(nbytes)), why
    return int(factor * cm.target.pass_ns(nbytes)), why


def _window_sizes(instr: Instruction, rank: int) -> tuple[int, ...]:
    """The window size of each dim of a ``reduce-window`` (1 where it has none)."""
    window = instr.attr("window")
    dims = tuple(getattr(window, "dims", ()))
    return tuple(d.size for d in dims) if len(dims) == rank else (1,) * rank


def _windowed_minor(instr: Instruction, shape: ArrayShape, here: ArrayShape,
                    rule: OpRule) -> tuple[int, str]:
    """``(extra ns, why)`` of a ``reduce-window`` writing ``here``: ``ns_per_element`` per
    element its windows read when its physically most-minor non-trivial dim has a window
    wider than 1 (measured, f32 sums and maxima of 256 KiB to 8 MiB: 3-6x the time of the
    same windows with that dim major, 0.16-0.37 ns more per element read)."""
    sizes = _window_sizes(instr, shape.rank)
    order = [d for d in here.effective_layout().minor_to_major if shape.dims[d] != 1]
    if not order or sizes[order[0]] == 1:
        return 0, ""
    arrays = max(1, len(instr.operands) // 2)  # a variadic reduce-window reduces several
    reads = math.prod(shape.dims) * math.prod(sizes) * arrays
    ns = float(rule.params.get("ns_per_element", 0.0))
    return int(reads * ns), (f"the reduce-window's physically minor dim {order[0]} has a "
                             f"window of {sizes[order[0]]}: {reads} window elements x {ns:g} ns")


def _column_stride(here: ArrayShape, order: list[int], reduced: set[int]) -> int:
    """Bytes between the elements one result element of a column reduction reads in turn:
    a step along its physically most minor reduced dim, past the kept dims minor to it."""
    stride = element_bytes(here.element_type)
    for d in order:
        if d in reduced:
            break
        stride *= here.dims[d]
    return stride


def _column_passes(rule: OpRule, stride: int, nbytes: int) -> float:
    """A column reduction's extra passes at a read stride over an operand of ``nbytes``.

    With ``stride_passes`` (``[[stride, passes], ...]``, the calibration's pairs at each
    stride it measured): those passes, in proportion to log2 of the stride between two
    measured strides and the nearest end's beyond them (measured on the EPYC, f32 sums of
    1 MiB, 2026-11-29: 11.7, 11.9 and 13.2 extra passes at 128, 256 and 512 bytes apart,
    22.5 at 1 KiB, 43.2 at 2 KiB, 52.9 at 4 KiB, 51.1 at 8 KiB: flat, then steep, which the
    line through the two ends priced at twice the passes at 512 bytes apart). Without it:
    ``read_factor`` up to ``narrow_stride`` bytes, ``wide_factor`` from ``wide_stride`` on,
    and in between in proportion to log2 of the stride (the farther apart the reads, the
    more of them miss). Those passes are over an operand of ``large_bytes`` (1 MiB); with
    ``small_bytes`` and ``small_scale``, an operand of ``small_bytes`` or less pays
    ``small_scale`` times them, and one in between in proportion to log2 of its size (an
    operand that fits in the cache nearest the core misses less)."""
    curve = rule.params.get("stride_passes")
    if curve:
        passes = curve_passes(stride, sorted((int(x), float(y)) for x, y in curve))
    else:
        passes = stride_passes(stride, float(rule.params["read_factor"]),
                               float(rule.params["wide_factor"]),
                               int(rule.params.get("narrow_stride", 512)),
                               int(rule.params.get("wide_stride", 4096)))
    return passes * _size_scale(rule, nbytes)


def curve_passes(x: int, points: Sequence[tuple[int, float]]) -> float:
    """The measured ``(stride, passes)`` ``points`` (strides ascending) read at ``x``: the
    nearest end's passes beyond them, in proportion to log2 of ``x`` between two of them
    (:func:`stride_passes` between each neighbouring pair)."""
    if x <= points[0][0]:
        return points[0][1]
    for (near, low), (far, high) in zip(points, points[1:]):
        if x <= far:
            return stride_passes(x, low, high, near, far)
    return points[-1][1]


def stride_passes(x: int, low: float, high: float, near: int, far: int) -> float:
    """``low`` up to ``near``, ``high`` from ``far`` on, in proportion to log2 of ``x`` in
    between: a column reduction's passes by its read stride (:func:`_column_passes`; the
    calibration fit prices its pairs the same way) and their share by its operand's size
    (:func:`_size_scale`)."""
    if x <= near or far <= near:
        return low if x <= near else high
    if x >= far:
        return high
    return low + (high - low) * math.log2(x / near) / math.log2(far / near)


def _size_scale(rule: OpRule, nbytes: int) -> float:
    """What a column reduction over ``nbytes`` pays of the passes measured over
    ``large_bytes`` (:func:`_column_passes`): 1 from there on, ``small_scale`` up to
    ``small_bytes``, in proportion to log2 of the size in between."""
    small = int(rule.params.get("small_bytes", 0))
    if not small:
        return 1.0
    return stride_passes(nbytes, float(rule.params.get("small_scale", 1.0)), 1.0, small,
                         int(rule.params.get("large_bytes", 1 << 20)))


def _vectorized_dim(reduced: list[int], shape: ArrayShape, rule: OpRule,
                    combiner: str) -> int | None:
    """The reduced dim whose loop XLA:CPU's row reduction runs vectorized (None without the
    rule's ``order_factor``, or for a combiner not in its ``vectorized`` list: a ``maximum``
    row reduction ran scalar, as slow in every order, measured): the loops nest in the
    listed order, the last listed innermost (XLA's
    ``ForLoopNest::AddLoopsForShapeOnDimensions``), and an innermost loop of at most
    ``unroll_extent`` iterations is unrolled whole, which leaves the loop around it innermost
    (measured: the fast layout follows that dim across 12 shapes)."""
    if not rule.params.get("order_factor") or combiner not in rule.params.get("vectorized", ()):
        return None
    listed = [d for d in reduced if shape.dims[d] != 1]
    if not listed:
        return None
    unroll = int(rule.params.get("unroll_extent", 0))
    if len(listed) > 1 and shape.dims[listed[-1]] <= unroll:
        return listed[-2]
    return listed[-1]


def _misordered_reduction(cm: CostModel, instr: Instruction, shape: ArrayShape,
                          here: ArrayShape, order: list[int], rule: OpRule,
                          combiner: str) -> tuple[int, str]:
    """A reduction whose physically minor dim is reduced, with some dim kept, pays
    ``order_factor`` passes over its operand when that dim is not the one whose loop XLA:CPU
    vectorizes (:func:`_vectorized_dim`): the vectorized loop then strides through memory,
    and the contiguous one runs scalar (measured: ``f32[64,32,128]`` summed over ``{0,1}``
    took 0.03 ms as ``{0,1,2}``, 0.23 ms as ``{1,0,2}``; ``f32[32,128,256]`` the other way
    round, 0.42 and 0.21 ms, its inner loop of 128 not unrolled). A reduction of every
    non-trivial dim is not affected (measured)."""
    factor = float(rule.params.get("order_factor", 0.0))
    vector = _vectorized_dim(list(_dims(instr.attr("dimensions"))), shape, rule, combiner)
    if not factor or vector is None or order[0] == vector:
        return 0, ""
    why = (f"the reduce's physically minor dim {order[0]} is not dim {vector}, whose loop "
           f"XLA:CPU vectorizes: +{factor:g} pass(es) over the operand")
    return int(factor * cm.target.pass_ns(physical_size_bytes(here))), why


def preferred_candidates_for_rule(cm: CostModel, instr: Instruction, role: str, k: int,
                                  shape: ArrayShape, rule: OpRule,
                                  labels: ConvDimLabels | None,
                                  combiner: str = "",
                                  ranks: tuple[int, ...] = ()) -> list[Candidate]:
    op = rule_op(instr)
    rank = shape.rank
    if rule.kind == "default_layout":
        return [Candidate(default_layout(rank).minor_to_major)]
    if rule.kind == "conv_layout":
        cand = _conv_orders(labels, role, k, str(rule.params.get("layout", "NHWC"))) if labels else None
        return [cand] if cand is not None else []
    if rule.kind == "format":
        if labels is None or len(labels.input_spatial) != 2 or role != "operand":
            return []
        fmt = str(rule.params.get("format", ""))
        if fmt == NC1HWC0 and k == 0:
            return [Candidate(_conv_orders(labels, role, 0, "NCHW").minor_to_major, NC1HWC0)]  # type: ignore[union-attr]
        if fmt == FRACTAL_Z and k == 1:
            order = [labels.kernel_input_feature, *labels.kernel_spatial, labels.kernel_output_feature]
            return [Candidate(_m2m(order).minor_to_major, FRACTAL_Z)]
        return []
    if op == "dot" and rule.kind == "dot_nn" and len(ranks) == 3:
        forms = dot_forms(instr, k if role == "operand" else 0, ranks)  # type: ignore[arg-type]
        return [Candidate(form[0 if role == "operand" else 1]) for form in forms]
    if op == "dot" and rule.kind == "dot_nn" and role == "result":
        return [Candidate(default_layout(rank).minor_to_major)]
    if op == "dot" and rule.kind == "dot_batch_most_major":
        batch = (list(range(len(_dims(instr.attr("lhs_batch_dims")))))
                 if role == "result" else list(_dot_groups(instr, k)[0]))
        return [_m2m([*batch, *[d for d in range(rank) if d not in batch]])]
    if op == "dot" and role == "operand" and rule.kind.startswith("dot_"):
        batch, contracting = _dot_groups(instr, k)
        free = [d for d in range(rank) if d not in batch and d not in contracting]
        if rule.kind == "dot_contracting_most_minor" or (rule.kind == "dot_nn" and k == 0):
            return [_m2m([*batch, *free, *contracting])]
        if rule.kind == "dot_nn":
            return [_m2m([*batch, *contracting, *free])]
        return [_m2m([*batch, *contracting, *free]), _m2m([*batch, *free, *contracting])]
    if op == "reduce" and rule.kind == "reduction_minor" and role == "operand":
        reduced = list(_dims(instr.attr("dimensions")))
        kept = [d for d in range(rank) if d not in reduced]
        if not (reduced and kept):
            return []
        # The dim XLA:CPU's reduction loop nest vectorizes most minor (``order_factor``).
        vector = _vectorized_dim(reduced, shape, rule, combiner)
        if vector is not None:
            reduced = [d for d in reduced if d != vector] + [vector]
        fast = [*kept, *reduced] if rule.params.get("slow", "kept") == "kept" else [*reduced, *kept]
        return [_m2m(fast)]
    if op == "reduce-window" and rule.kind == "window_minor" and role == "result":
        sizes = _window_sizes(instr, rank)
        plain = [d for d in range(rank) if sizes[d] == 1 and shape.dims[d] != 1]
        if not plain:
            return []
        return [_m2m([d for d in range(rank) if d not in plain] + plain)]
    if op == "reduce" and rule.kind == "row_reduction" and role == "operand":
        reduced = _dims(instr.attr("dimensions"))
        size = 1
        for d in reduced:
            size *= shape.dims[d]
        if size < int(rule.params.get("min_reduced_size", 0)):
            return []
        kept = [d for d in range(rank) if d not in reduced]
        return [_m2m([*kept, *reduced])]
    return []
