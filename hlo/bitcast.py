"""When a transpose or reshape moves no bytes, and which layouts make it so.

A reshape or transpose is a **bitcast** when the output's buffer is the input's
buffer, byte for byte: every element keeps its physical offset, the padding
sits in the same places and both buffers have the same size.

* Reshape: element ``k`` (row-major logical number) of the input becomes
  element ``k`` of the output. Untiled, this holds iff, after dropping size-1
  dims, every *common-factor group* (the finest split of both dim lists into
  runs of equal products, e.g. ``[3,8 | 5,7 | 11]`` against ``[4,3,2 | 7,5 | 11]``)
  is physically contiguous and in descending ``minor_to_major`` order on both
  sides, and the groups come in the same physical order.
* Transpose with ``dimensions`` (output dim ``i`` is input dim ``dimensions[i]``):
  untiled, a bitcast iff ``in.minor_to_major[i] == dimensions[out.minor_to_major[i]]``
  once size-1 dims are ignored.

With tiles there is no rule of thumb worth trusting: the tiled checks compare
the physical offset maps of :mod:`hlo.tiling` element by element.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

import numpy as np

from hlo.errors import LayoutDependentBitcast, LayoutError, Location
from hlo.ir import Instruction, Module
from hlo.shape import ArrayShape, Layout, element_bits, leaf_arrays
from hlo.tiling import element_storage_bits, offset_terms, physical_element_count, physical_offsets


# ---------------------------------------------------------------------------
# Shared pieces
# ---------------------------------------------------------------------------


def common_factor_groups(a: Sequence[int], b: Sequence[int]) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """The finest pairing of runs of ``a`` and ``b`` with equal products.

    ``([3,8,5,7,11], [4,3,2,7,5,11])`` -> ``[((0,1),(0,1,2)), ((2,3),(3,4)), ((4,),(5,))]``.
    Size-1 dims must be removed first (they would make the split ambiguous).
    """
    groups = []
    i = j = 0
    while i < len(a) or j < len(b):
        gi, gj = [i], [j]
        pa, pb = a[i], b[j]
        i, j = i + 1, j + 1
        while pa != pb:
            if pa < pb:
                gi.append(i)
                pa *= a[i]
                i += 1
            else:
                gj.append(j)
                pb *= b[j]
                j += 1
        groups.append((tuple(gi), tuple(gj)))
    return groups


def _same_storage(src: ArrayShape, dst: ArrayShape, ignore_element_type: bool) -> bool:
    if ignore_element_type:
        return True
    return (src.element_type == dst.element_type
            and element_storage_bits(src) == element_storage_bits(dst))


def _physical_order(shape_dims: Sequence[int], layout: Layout) -> list[int]:
    """Non-trivial dims, major to minor."""
    return [d for d in layout.major_to_minor() if shape_dims[d] != 1]


def _untiled(shape: ArrayShape) -> bool:
    return not shape.effective_layout().tiles


# ---------------------------------------------------------------------------
# Transposes
# ---------------------------------------------------------------------------


def _check_permutation(dimensions: Sequence[int], rank: int) -> tuple[int, ...]:
    dimensions = tuple(dimensions)
    if sorted(dimensions) != list(range(rank)):
        raise LayoutError(f"transpose dimensions {list(dimensions)} are not a permutation of 0..{rank - 1}")
    return dimensions


def transpose_rule_holds(src_mtm: Sequence[int], dst_mtm: Sequence[int], dimensions: Sequence[int]) -> bool:
    """XLA's strict rule: ``src_mtm[i] == dimensions[dst_mtm[i]]`` for every ``i``."""
    return all(s == dimensions[d] for s, d in zip(src_mtm, dst_mtm, strict=True))


def transpose_is_bitcast(src: ArrayShape, dst: ArrayShape, dimensions: Sequence[int],
                         *, ignore_element_type: bool = False) -> bool:
    """True when ``transpose(src), dimensions=...`` with result ``dst`` moves no bytes.

    ``f32[10,5]{1,0}`` -> ``f32[5,10]{0,1}`` with ``dimensions={1,0}`` is a bitcast.
    """
    dimensions = _check_permutation(dimensions, src.rank)
    if tuple(dst.dims) != tuple(src.dims[d] for d in dimensions):
        raise LayoutError(f"{dst.dims_text()} is not a transpose of {src.dims_text()} by {list(dimensions)}")
    if not _same_storage(src, dst, ignore_element_type):
        return False
    sl, dl = src.effective_layout(), dst.effective_layout()
    if sl.tiles == dl.tiles and transpose_rule_holds(sl.minor_to_major, dl.minor_to_major, dimensions):
        if sl.tail_padding_alignment == dl.tail_padding_alignment:
            return True  # identical physical dims, identical tiling
    if _untiled(src) and _untiled(dst):
        if physical_element_count(src) != physical_element_count(dst):
            return False
        expected = [dimensions[d] for d in _physical_order(dst.dims, dl)]
        return expected == _physical_order(src.dims, sl)
    if physical_element_count(src) != physical_element_count(dst):
        return False
    separable = _per_dim_offsets(src)
    if separable is not None:
        target = _per_dim_offsets(dst)
        if target is not None:  # both sums of one function per dim: compare dim by dim
            return separable[0] == target[0] and all(
                np.array_equal(separable[1][d], target[1][k]) for k, d in enumerate(dimensions)
            )
    return bool(np.array_equal(physical_offsets(src).transpose(dimensions), physical_offsets(dst)))


def _per_dim_offsets(shape: ArrayShape) -> tuple[int, list[np.ndarray]] | None:
    """(offset of element 0, per dim the offset added along it) when the offset is such a sum."""
    terms = offset_terms(shape)
    if any(len(key) > 1 for key in terms):
        return None
    base = 0
    per_dim = [np.zeros(d, dtype=np.int64) for d in shape.dims]
    for key, term in terms.items():
        if not key:
            base += int(term.reshape(-1)[0])
            continue
        line = term.reshape(-1)
        base += int(line[0])
        per_dim[key[0]] = per_dim[key[0]] + (line - line[0])
    return base, per_dim


def _with_minor_to_major(layout: Layout, mtm: tuple[int, ...]) -> Layout:
    return Layout(mtm, tiles=layout.tiles, tail_padding_alignment=layout.tail_padding_alignment,
                  element_size_bits=layout.element_size_bits, memory_space=layout.memory_space)


# ---------------------------------------------------------------------------
# Reshapes
# ---------------------------------------------------------------------------


def reshape_rule_holds(src_dims: Sequence[int], src_mtm: Sequence[int],
                       dst_dims: Sequence[int], dst_mtm: Sequence[int]) -> bool:
    """The untiled common-factor rule (see the module docstring)."""
    expected = _aligned_physical_order(src_dims, src_mtm, dst_dims)
    if expected is None:
        return False
    return expected == _physical_order(dst_dims, Layout(tuple(dst_mtm)))


def _aligned_physical_order(src_dims: Sequence[int], src_mtm: Sequence[int],
                            dst_dims: Sequence[int]) -> list[int] | None:
    """The only physical order (major to minor, size-1 dims left out) of the
    ``dst_dims`` that keeps every element in place, or None when ``src_mtm``
    splits a common-factor group."""
    src_keep = [d for d in range(len(src_dims)) if src_dims[d] != 1]
    dst_keep = [d for d in range(len(dst_dims)) if dst_dims[d] != 1]
    groups = common_factor_groups([src_dims[d] for d in src_keep], [dst_dims[d] for d in dst_keep])
    group_of = {}
    for g, (gi, _) in enumerate(groups):
        for i in gi:
            group_of[src_keep[i]] = g
    order = [d for d in reversed(tuple(src_mtm)) if src_dims[d] != 1]
    result: list[int] = []
    at = 0
    while at < len(order):
        gi, gj = groups[group_of[order[at]]]
        run = [src_keep[i] for i in gi]
        if order[at : at + len(run)] != run:
            return None
        result += [dst_keep[j] for j in gj]
        at += len(run)
    return result


def is_bitcast(src: ArrayShape, dst: ArrayShape, *, ignore_element_type: bool = False) -> bool:
    """True when reshaping ``src`` into ``dst`` moves no bytes (same element
    type and storage width, same buffer size, every element at the same offset).

    ``f32[3,2,2]{1,0,2}`` -> ``f32[6,2]{0,1}`` is a bitcast; with ``{0,1,2}`` it is not.
    """
    if src.element_count != dst.element_count:
        raise LayoutError(f"{dst.dims_text()} has a different element count than {src.dims_text()}")
    if not _same_storage(src, dst, ignore_element_type):
        return False
    if physical_element_count(src) != physical_element_count(dst):
        return False
    if src.element_count == 0:
        return True
    if _untiled(src) and _untiled(dst):
        return reshape_rule_holds(src.dims, src.effective_layout().minor_to_major,
                                  dst.dims, dst.effective_layout().minor_to_major)
    return bool(np.array_equal(physical_offsets(src).reshape(-1), physical_offsets(dst).reshape(-1)))


def moves_no_bytes(instr: Instruction, operand: object) -> bool:
    """True when ``instr``, a ``reshape`` or ``transpose`` of ``operand`` (its operand's
    shape), is a bitcast in the layouts written: XLA's layout-sensitive simplifier writes
    it as a ``bitcast`` after layout assignment. False for any other instruction, and when
    either side has no layout or the shapes do not fit the op."""
    if instr.opcode not in ("reshape", "transpose") or len(instr.operands) != 1:
        return False
    dst = instr.shape
    if not isinstance(operand, ArrayShape) or not isinstance(dst, ArrayShape) \
            or operand.layout is None or dst.layout is None:
        return False
    dims = instr.attr("dimensions")
    try:
        if instr.opcode == "reshape":
            return is_bitcast(operand, dst)
        return isinstance(dims, tuple) and transpose_is_bitcast(operand, dst, dims)
    except LayoutError:
        return False


def _place_unit_dims(dims: Sequence[int], order: list[int], *, all_major: bool) -> tuple[int, ...]:
    """Insert the size-1 dims into a physical order (major to minor) and return minor_to_major.

    By default a size-1 dim sits just major of the next larger non-trivial dim
    (just minor of the previous one at the end), so a default-layout input
    gives a default-layout output; ``all_major`` puts them all outermost, out
    of the way of tiles.
    """
    units = [d for d in range(len(dims)) if dims[d] == 1]
    if all_major:
        return tuple(reversed(units + order))
    physical = list(order)
    for u in reversed(units):
        later = [d for d in range(u + 1, len(dims)) if d in physical]
        earlier = [d for d in range(u - 1, -1, -1) if d in physical]
        if later:
            physical.insert(physical.index(later[0]), u)
        elif earlier:
            physical.insert(physical.index(earlier[0]) + 1, u)
        else:
            physical.insert(0, u)
    return tuple(reversed(physical))


#: Bounds of the exhaustive search for tiled reshapes (orders of the
#: non-trivial dims × placements of the size-1 dims, each checked exactly).
EXHAUSTIVE_MAX_DIMS = 4
EXHAUSTIVE_MAX_ELEMENTS = 1 << 20


def _unit_dim_spreads(dims: Sequence[int], order: list[int], layout: Layout) -> list[tuple[int, ...]]:
    """Every way to spread the size-1 dims over the gaps of ``order`` that tiles can see.

    Tiles pad size-1 dims they cover, so where the size-1 dims sit among the
    minor positions matters; which size-1 dim sits where does not (all
    interchangeable), nor do positions beyond the reach of the tiles.
    """
    units = [d for d in range(len(dims)) if dims[d] == 1]
    reach = min(len(order), sum(len(t.dims) for t in layout.tiles))
    out = []
    # gap g = number of non-trivial dims more minor than the size-1 dim (capped at reach)
    n = len(order)
    for gaps in itertools.combinations_with_replacement(range(reach + 1), len(units)):
        before: dict[int, int] = {}  # index into order -> units placed just major of it
        for g in gaps:
            key = n - g if g < reach else 0
            before[key] = before.get(key, 0) + 1
        physical: list[int] = []
        pool = iter(units)
        for idx in range(n + 1):
            physical += [next(pool) for _ in range(before.get(idx, 0))]
            if idx < n:
                physical.append(order[idx])
        out.append(tuple(reversed(physical)))
    return out


def _layout_for_reshape(known: ArrayShape, other_dims: Sequence[int]) -> Layout | None:
    if known.element_count != int(np.prod(other_dims, dtype=object)):
        raise LayoutError(f"[{','.join(map(str, other_dims))}] has a different element count "
                          f"than {known.dims_text()}")
    layout = known.effective_layout()
    if known.element_count == 0:
        # nothing to keep in place: any order with the same (empty) buffer will do
        candidate = _with_minor_to_major(layout, tuple(range(len(other_dims) - 1, -1, -1)))
        other = ArrayShape(known.element_type, tuple(other_dims), candidate)
        return candidate if physical_element_count(other) == physical_element_count(known) else None
    order = _aligned_physical_order(known.dims, layout.minor_to_major, other_dims)
    candidates: list[tuple[int, ...]] = []
    if order is not None:
        candidates = [_place_unit_dims(other_dims, order, all_major=False),
                      _place_unit_dims(other_dims, order, all_major=True)]
        if layout.tiles:
            candidates += _unit_dim_spreads(other_dims, order, layout)
    nontrivial = [d for d in range(len(other_dims)) if other_dims[d] != 1]
    if (layout.tiles and len(nontrivial) <= EXHAUSTIVE_MAX_DIMS
            and physical_element_count(known) <= EXHAUSTIVE_MAX_ELEMENTS):
        # A tile can itself transpose whole dims (T(2,1) on f32[2,2]{0,1} is
        # row-major), so the rule's order is not the only one: search them all.
        for perm in itertools.permutations(nontrivial):
            candidates += _unit_dim_spreads(other_dims, list(perm), layout)
    seen = set()
    for mtm in candidates:
        if mtm in seen:
            continue
        seen.add(mtm)
        candidate = _with_minor_to_major(layout, mtm)
        other = ArrayShape(known.element_type, tuple(other_dims), candidate)
        if is_bitcast(known, other):
            return candidate
    return None


def reshape_output_layout_for_bitcast(src: ArrayShape, out_dims: Sequence[int]) -> Layout | None:
    """A layout for the reshape's result that makes it a bitcast, or None.

    ``f32[3,8,5,7,11]{3,2,1,0,4}`` -> ``[4,3,2,7,5,11]`` gives ``{4,3,2,1,0,5}``.
    The result keeps the input's tiles and layout properties. Untiled, None
    means no layout exists. Tiled, the search covers the common-factor order
    with every placement of size-1 dims, and every order when there are at most
    :data:`EXHAUSTIVE_MAX_DIMS` non-trivial dims and
    :data:`EXHAUSTIVE_MAX_ELEMENTS` physical elements; beyond that a None means
    "none among those orders".
    """
    return _layout_for_reshape(src, out_dims)


def reshape_input_layout_for_bitcast(src_dims: Sequence[int], dst: ArrayShape) -> Layout | None:
    """A layout for the reshape's operand (of ``src_dims``) that makes it a bitcast, or None."""
    return _layout_for_reshape(dst, src_dims)


def _matching_permutations(src: tuple[int, ...], dst: tuple[int, ...],
                           chosen: tuple[int, ...] = ()) -> Iterator[tuple[int, ...]]:
    """Permutations ``p`` with ``dst[i] == src[p[i]]`` (the transposes from src to dst),
    each extending ``chosen``; in lexicographic order."""
    i = len(chosen)
    if i == len(dst):
        yield chosen
        return
    for j, size in enumerate(src):
        if size == dst[i] and j not in chosen:
            yield from _matching_permutations(src, dst, chosen + (j,))


#: Enough transposes to try for any realistic rank; a bitcast needing more is reported.
_MAX_PERMUTATIONS = 5040


def bitcast_kind(src: ArrayShape, dst: ArrayShape) -> str | None:
    """``"reshape"`` or ``"transpose"`` when ``src -> dst`` is that op moving no bytes, else None.

    XLA creates ``bitcast`` only from reshapes and transposes whose layouts make
    them free (and from copies between equal layouts), so a bitcast explained by
    neither reinterprets bytes in a way no logical op intended.
    ``f32[2,3]{1,0} -> f32[6]{0}`` is a reshape; ``f32[2,3]{1,0} -> f32[3,2]{0,1}``
    a transpose; ``f32[2,3]{1,0} -> f32[3,2]{1,0}`` (same sizes) a reshape too, but
    ``f32[2,3]{0,1} -> f32[6]{0}`` neither.
    """
    same_width = element_bits(src.element_type) == element_bits(dst.element_type)
    ignore = same_width and src.element_type != dst.element_type
    if src.element_count == dst.element_count and is_bitcast(src, dst, ignore_element_type=ignore):
        return "reshape"
    if src.rank == dst.rank and sorted(src.dims) == sorted(dst.dims):
        for n, perm in enumerate(_matching_permutations(src.dims, dst.dims)):
            if n >= _MAX_PERMUTATIONS:
                break
            if transpose_is_bitcast(src, dst, perm, ignore_element_type=ignore):
                return "transpose"
    return None


def fully_laid_out(module: Module) -> bool:
    """Every array of rank 1 or more in ``module`` has a layout written."""
    return all(leaf.layout is not None or leaf.rank == 0
               for comp in module.computations for instr in comp.instructions
               for _, leaf in leaf_arrays(instr.shape))


def reject_layout_dependent_bitcasts(module: Module) -> None:
    """Raise :class:`~hlo.errors.LayoutDependentBitcast` at the first ``bitcast`` of a
    module without every layout: a bitcast means "the same bytes", which depends on the
    layouts layout assignment is about to choose (DESIGN §6)."""
    if fully_laid_out(module):
        return
    for comp in module.computations:
        for instr in comp.instructions:
            if instr.opcode == "bitcast":
                span = instr.span
                raise LayoutDependentBitcast(
                    f"'{instr.name}' is a bitcast, whose meaning depends on layouts: layout "
                    "assignment needs a module without bitcasts, or one with a layout on "
                    "every array",
                    None if span is None else Location(module.name, span.line, span.column))
