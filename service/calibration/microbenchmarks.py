"""The calibration microbenchmarks: small laid-out HLO modules, grouped by their parameters.

Every module of a :class:`Group` takes the same parameters, so one
:func:`~service.xla.execution.run_modules` call times them all on shared inputs, interleaved.
Each module is one :class:`Bench`: its ``kind`` (what the fit uses it for) and ``bytes`` (the
x of the fit: bytes one pass over the operand moves).

Kinds (2-D ``[n, m]`` row-major operand unless said otherwise):

- ``base``: a 1-element slice, the fixed cost of running a module;
- ``copy``: a copy to the same layout (one read + one write);
- ``copy_minor``: a copy to ``{0,1}`` (moves the minor dim);
- ``copy_major``: 3-D ``[a,b,c]{2,1,0}`` copied to ``{2,0,1}`` (only major dims move);
- ``transpose``: a standalone ``transpose`` writing row-major (moves the minor dim);
- ``reshape_moving``: a ``reshape`` to ``[4, n/4, 2, m/2]`` in ``{1,3,0,2}`` (an attention
  head split written with the layout its transpose wants), not a bitcast: XLA:CPU emits it
  as its own elementwise loop, not as a copy;
- ``reduce_minor``: a sum over dim 1 (the reduced dim is minor: a row reduction);
- ``reduce_major``: a sum over dim 0 (the kept dim is minor);
- ``add_same`` / ``add_mixed``: ``add`` of two operands in the same / other layouts;
- ``dot_nn`` / ``dot_operand`` / ``dot_result``: an f32 dot in its physical nn form, and with
  one operand or the result in the other layout (:func:`dot_form_group`; bytes = flops);
- ``window_plain`` / ``window_minor``: a ``reduce-window`` (:data:`WINDOW_CASES`) with a dim
  without a window physically minor, or a windowed one (bytes = the elements its windows
  read);
- ``conv_default`` / ``conv_naive``: a 3x3 NHWC convolution with every array row-major, or
  with the input, the kernel or the result in another layout (``bytes`` is its flops here);
- ``column_R`` / ``row_R``: a sum over dim 0 of ``[R, N/R]`` (1 MiB of f32) laid out ``{1,0}``
  (the kept dim minor: each result element reads ``R`` elements a row apart) or ``{0,1}``
  (the reduced dim minor), for ``R`` from 16 to 8192: where a column reduction turns slow,
  and how slow by how far apart it reads (``4 N / R`` bytes: 4 KiB at ``R`` = 256 down to
  128 bytes at 8192);
- ``scolumn_R`` / ``srow_R``: the same pairs over 256 KiB (:data:`SMALL_EXTENTS`);
- ``rowmax_R``: the row form of ``column_R`` with a ``maximum`` combiner (not vectorized);
- ``argcol_R`` / ``argrow_R``: ``column_R`` and ``row_R`` as an argmax (a variadic reduce of
  the operand and an s32 iota in its layout, with the combiner ``jnp.argmax`` lowers to:
  the larger value, NaN first, the lower index on ties): where a variadic column reduction
  turns slow;
- ``argspancol_S`` / ``argspanrow_S``: an argmax over the middle dim (32 elements) of
  ``f32[B,32,K]`` (1 MiB) laid out ``{2,1,0}`` (a column reduction whose result element reads
  rows ``4 K`` bytes apart, spanning ``S = 128 K`` bytes) or ``{1,2,0}`` (the row form):
  from which span the variadic column form turns slow;
- ``row_ordered`` / ``row_misordered``: a 3-D row reduction with the dim whose loop XLA:CPU
  vectorizes minor, or another reduced dim (:data:`ORDER_CASES`);
- ``copy_rows_C`` / ``copy_wide_C``: ``f32[8,64,64,C]{2,3,1,0}`` copied with ``C`` (1-6
  elements) or a 64-element dim as the result's minor dim: the same bytes, through XLA:CPU's
  blocked transpose in tiles that ``C`` bounds, or in 8x8 tiles;
- ``copy_rev_C`` / ``copy_runs_C``: ``f32[8,64,64,C]{3,2,1,0}`` (``C`` minor) copied to a
  64-element minor dim (tiles that the source's ``C`` bounds) or with only major dims moving
  (runs of ``C`` elements, one ``memcpy`` each);
- ``form_S`` / ``near_S``: ``f32[n,m]{1,0}`` (``S`` = ``nxm``, ``m`` at most 128: the
  innermost loop reads the operand fewer than :data:`NEAR_STRIDE` bytes apart) transposed to
  ``[m,n]{1,0}`` in XLA's form (a transpose that is a bitcast, then a copy) and as one
  standalone ``transpose``: what a standalone 2-D transpose costs where its reads are close;
- ``mform_S`` / ``major_S``: ``f32[a,b,c]{2,1,0}`` (``S`` = ``axbxc``) transposed to
  ``[b,a,c]{2,1,0}`` (only major dims move: the innermost loop reads rows of ``c`` elements
  contiguously) in XLA's form (a bitcast transpose, then a copy) and as one standalone
  ``transpose``: what a standalone transpose that moves only major dims costs;
- ``transpose_rows_C`` / ``transpose_wide_C``: the same bytes through a standalone
  ``transpose`` of the operand's row-major view, to runs of ``C`` (reading 256 bytes apart)
  or of 64 elements: whether that loop pays per run too;
- ``dot_nn`` / ``dot_tn`` / ``dot_nt``: a square dot with row-major operands, or the lhs/rhs
  column-major;
- ``fresh_OP`` / ``inplace_OP``: an elementwise op into a fresh buffer or written over its
  operand (:data:`IN_PLACE_OPS`, :func:`in_place_group`);
- ``copies_none`` / ``copies_chain``: ``f32[4,8]`` negated twice, and with
  :data:`OVERHEAD_COPIES` copies moving the minor dim in between: a copy's own cost;
- ``slice``, ``concatenate``, ``pad``, ``broadcast``, ``bitcast_reshape``: recorded, not fitted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hlo.parser import parse_module
from hlo.ir import Module
from hlo.opcode_facts import ELEMENTWISE_BINARY
from hlo.shape import element_bytes

#: (rows, cols) from cache-resident to DRAM (f32: 64 KiB, 1 MiB, 16 MiB).
SIZES = ((128, 128), (512, 512), (2048, 2048))
DTYPES = ("f32", "bf16", "s8", "pred")
_BYTES = {"f32": 4, "bf16": 2, "s8": 1, "pred": 1}
_ZERO = {"f32": "0", "bf16": "0", "s8": "0", "pred": "false"}
_ADD = {"pred": "or"}


@dataclass(frozen=True, slots=True)
class Bench:
    kind: str
    label: str
    module: Module
    bytes: int
    dtype: str


@dataclass(frozen=True, slots=True)
class Group:
    """Modules with the same parameters; the first is the reference of the paired ratios."""

    name: str
    benches: tuple[Bench, ...]


def _module(name: str, params: list[str], body: list[str], result: str,
            computations: str = "") -> Module:
    header = f"HloModule {name}, entry_computation_layout={{({', '.join(params)})->{result}}}"
    lines = [header, computations, "ENTRY %main {", *[f"  {line}" for line in body], "}", ""]
    return parse_module("\n".join(lines), name)


def _reducer(t: str) -> str:
    op = _ADD.get(t, "add")
    return (f"%sum {{\n  %a = {t}[] parameter(0)\n  %b = {t}[] parameter(1)\n"
            f"  ROOT %s = {t}[] {op}(%a, %b)\n}}\n")


#: The argmax combiner ``jnp.argmax`` lowers to, named as :func:`_reducer`'s: the larger
#: value (a NaN wins), the lower index where the values are equal.
_ARGMAX = """%sum {
  %a = f32[] parameter(0)
  %ai = s32[] parameter(1)
  %b = f32[] parameter(2)
  %bi = s32[] parameter(3)
  %gt = pred[] compare(%a, %b), direction=GT
  %nan = pred[] compare(%a, %a), direction=NE
  %take = pred[] or(%gt, %nan)
  %v = f32[] select(%take, %a, %b)
  %eq = pred[] compare(%a, %b), direction=EQ
  %lt = pred[] compare(%ai, %bi), direction=LT
  %tie = pred[] and(%eq, %lt)
  %first = pred[] or(%take, %tie)
  %i = s32[] select(%first, %ai, %bi)
  ROOT %t = (f32[], s32[]) tuple(%v, %i)
}
"""

#: A ``maximum`` combiner named as :func:`_reducer`'s (LLVM leaves its row loop scalar).
_MAX = ("%sum {\n  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n"
        "  ROOT %s = f32[] maximum(%a, %b)\n}\n")


def matrix_group(t: str, n: int, m: int, bitcast: bool = True) -> Group:
    """Single-operand benchmarks on ``t[n,m]{1,0}`` (``bitcast=False``: without
    ``bitcast_reshape``, for a path that compiles through XLA's layout assignment)."""
    p = f"{t}[{n},{m}]{{1,0}}"
    nbytes = n * m * _BYTES[t]
    param = f"%p = {p} parameter(0)"
    zero = f"%z = {t}[] constant({_ZERO[t]})"
    mods = {
        "copy": ([param, f"ROOT %c = {p} copy(%p)"], p),
        "copy_minor": ([param, f"ROOT %c = {t}[{n},{m}]{{0,1}} copy(%p)"], f"{t}[{n},{m}]{{0,1}}"),
        "transpose": ([param, f"ROOT %t = {t}[{m},{n}]{{1,0}} transpose(%p), dimensions={{1,0}}"],
                      f"{t}[{m},{n}]{{1,0}}"),
        "reduce_minor": ([param, zero, f"ROOT %r = {t}[{n}]{{0}} reduce(%p, %z), dimensions={{1}}, "
                          "to_apply=%sum"], f"{t}[{n}]{{0}}"),
        "reduce_major": ([param, zero, f"ROOT %r = {t}[{m}]{{0}} reduce(%p, %z), dimensions={{0}}, "
                          "to_apply=%sum"], f"{t}[{m}]{{0}}"),
        "base": ([param, f"ROOT %s = {t}[1,1]{{1,0}} slice(%p), slice={{[0:1], [0:1]}}"],
                 f"{t}[1,1]{{1,0}}"),
        "slice": ([param, f"ROOT %s = {t}[{n // 2},{m}]{{1,0}} slice(%p), "
                   f"slice={{[0:{n // 2}], [0:{m}]}}"], f"{t}[{n // 2},{m}]{{1,0}}"),
        "concatenate": ([param, f"ROOT %c = {t}[{2 * n},{m}]{{1,0}} concatenate(%p, %p), "
                         "dimensions={0}"], f"{t}[{2 * n},{m}]{{1,0}}"),
        "pad": ([param, zero, f"ROOT %q = {t}[{n + 2},{m + 2}]{{1,0}} pad(%p, %z), "
                 "padding=1_1x1_1"], f"{t}[{n + 2},{m + 2}]{{1,0}}"),
        "broadcast": ([param, f"ROOT %b = {t}[2,{n},{m}]{{2,1,0}} broadcast(%p), "
                       "dimensions={1,2}"], f"{t}[2,{n},{m}]{{2,1,0}}"),
        "reshape_moving": ([param, f"ROOT %q = {t}[4,{n // 4},2,{m // 2}]{{1,3,0,2}} "
                            "reshape(%p)"], f"{t}[4,{n // 4},2,{m // 2}]{{1,3,0,2}}"),
        "bitcast_reshape": ([param, f"%b = {t}[{n * m}]{{0}} bitcast(%p)",
                             f"ROOT %c = {t}[{n * m}]{{0}} copy(%b)"], f"{t}[{n * m}]{{0}}"),
    }
    if not bitcast:
        del mods["bitcast_reshape"]
    benches = []
    for kind, (body, result) in mods.items():
        label = f"{kind}_{t}_{n}x{m}"
        comps = _reducer(t) if kind.startswith("reduce") else ""
        benches.append(Bench(kind, label, _module(label, [p], body, result, comps), nbytes, t))
    return Group(f"{t}[{n},{m}]", tuple(benches))


def major_group(t: str, n: int, m: int) -> Group:
    """A 3-D copy that permutes only major dims, against a plain copy of the same array."""
    a, b, c = 4, n // 4, m
    p = f"{t}[{a},{b},{c}]{{2,1,0}}"
    nbytes = a * b * c * _BYTES[t]
    base = f"{t}[1,1,1]{{2,1,0}}"
    benches = [Bench("base", f"base3d_{t}_{n}x{m}", _module(
        f"base3d_{t}_{n}x{m}", [p], [f"%p = {p} parameter(0)",
                                     f"ROOT %s = {base} slice(%p), slice={{[0:1], [0:1], [0:1]}}"],
        base), nbytes, t)]
    for kind, layout in (("copy", "{2,1,0}"), ("copy_major", "{2,0,1}")):
        label = f"{kind}3d_{t}_{n}x{m}"
        body = [f"%p = {p} parameter(0)", f"ROOT %c = {t}[{a},{b},{c}]{layout} copy(%p)"]
        module = _module(label, [p], body, f"{t}[{a},{b},{c}]{layout}")
        benches.append(Bench(kind if kind == "copy_major" else "copy3d", label, module, nbytes, t))
    return Group(f"{t}[{a},{b},{c}]", tuple(benches))


def binary_group(t: str, n: int, ops: tuple[str, ...] = ("add", "dot")) -> Group:
    """``add`` and ``dot`` (``ops``) of two ``[n,n]`` operands, row-major or with one
    column-major. On an accelerator the two ops go in groups of their own: in one group, the
    base module ran 3.5x slower than in a group of adds alone (0.249 against 0.072 ms
    beside 3-5 ms dots, H200), which skewed every time measured against it."""
    row, col = f"{t}[{n},{n}]{{1,0}}", f"{t}[{n},{n}]{{0,1}}"
    nbytes = n * n * _BYTES[t]
    one = f"{t}[1,1]{{1,0}}"
    tag = "" if ops == ("add", "dot") else "".join(f"_{op}" for op in ops)
    out = [Bench("base", f"base2{tag}_{t}_{n}", _module(
        f"base2{tag}_{t}_{n}", [row, row], [f"%a = {row} parameter(0)",
                                             f"%b = {row} parameter(1)",
                                             f"ROOT %s = {one} slice(%a), slice={{[0:1], [0:1]}}"],
        one), nbytes, t)]
    for kind, (l0, l1) in (("add_same", (row, row)), ("add_mixed", (row, col)),
                           ("dot_nn", (row, row)), ("dot_tn", (col, row)), ("dot_nt", (row, col))):
        if kind.split("_")[0] not in ops:
            continue
        label = f"{kind}_{t}_{n}"
        op = ("dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}"
              if kind.startswith("dot") else "add(%a, %b)")
        body = [f"%a = {l0} parameter(0)", f"%b = {l1} parameter(1)", f"ROOT %r = {row} {op}"]
        out.append(Bench(kind, label, _module(label, [l0, l1], body, row), nbytes, t))
    return Group(f"{t}[{n},{n}]x2{tag.replace('_', ' ')}", tuple(out))


#: Reduced extents of the column/row reduction group (elements each result element reads).
STRIDED_EXTENTS = (16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192)
#: The column/row pairs again over 256 KiB (2 KiB, 512 and 128 bytes apart): how much of the
#: passes measured over 1 MiB an operand that fits in the cache nearest the core pays.
SMALL_EXTENTS = (128, 512, 2048)
SMALL_ELEMENTS = 1 << 16


def reduction_group(extent: int, elements: int = 1 << 18, small: bool = False) -> Group:
    """``f32[extent, elements/extent]`` summed over dim 0, as a column (``{1,0}``) and as a row
    (``{0,1}``) reduction, with a base module of the same parameter; ``small``: only those
    two, their kinds prefixed ``s`` (the same at another size)."""
    n, m = extent, elements // extent
    out = f"f32[{m}]{{0}}"
    benches = []
    forms = (("base", "{1,0}"), ("column", "{1,0}"), ("row", "{0,1}"),
             ("rowmax", "{0,1}"), ("argcol", "{1,0}"), ("argrow", "{0,1}"))
    for kind, layout in forms[:3] if small else forms:
        p = f"f32[{n},{m}]{layout}"
        label = f"{kind}{extent}_f32_{n}x{m}"
        if kind.startswith("arg"):
            pair = f"(f32[{m}]{{0}}, s32[{m}]{{0}})"
            body = [f"%p = {p} parameter(0)", f"%i = s32[{n},{m}]{layout} iota(), iota_dimension=0",
                    "%v = f32[] constant(-inf)", "%z = s32[] constant(0)",
                    f"%r = {pair} reduce(%p, %i, %v, %z), dimensions={{0}}, to_apply=%sum",
                    f"ROOT %g = s32[{m}]{{0}} get-tuple-element(%r), index=1"]
            module = _module(label, [p], body, f"s32[{m}]{{0}}", _ARGMAX)
        elif kind == "base":
            body = [f"%p = {p} parameter(0)",
                    "ROOT %s = f32[1,1]{1,0} slice(%p), slice={[0:1], [0:1]}"]
            module = _module(label, [p], body, "f32[1,1]{1,0}")
        else:
            init, reducer = (("-inf", _MAX) if kind == "rowmax" else ("0", _reducer("f32")))
            body = [f"%p = {p} parameter(0)", f"%z = f32[] constant({init})",
                    f"ROOT %r = {out} reduce(%p, %z), dimensions={{0}}, to_apply=%sum"]
            module = _module(label, [p], body, out, reducer)
        name = kind if kind == "base" else f"{'s' if small else ''}{kind}_{extent}"
        benches.append(Bench(name, label, module, n * m * 4, "f32"))
    return Group(f"f32[{n},{m}] reduce", tuple(benches))


#: Kept minor extents ``K`` of the variadic span groups (spans of 8 KiB to 256 KiB).
SPAN_WIDTHS = (64, 128, 256, 512, 1024, 2048)
#: The reduced extent of the variadic span groups.
SPAN_EXTENT = 32


def variadic_span_group(width: int, elements: int = 1 << 18) -> Group:
    """An argmax over dim 1 of ``f32[B, 32, width]`` as a column (``{2,1,0}``) and as a row
    (``{1,2,0}``) reduction: the rows one result element reads span ``32 * 4 * width`` bytes."""
    n = SPAN_EXTENT
    b = max(1, elements // (n * width))
    span = n * 4 * width
    pair = f"(f32[{b},{width}]{{1,0}}, s32[{b},{width}]{{1,0}})"
    benches = []
    for kind, layout in (("argspancol", "{2,1,0}"), ("argspanrow", "{1,2,0}")):
        p = f"f32[{b},{n},{width}]{layout}"
        label = f"{kind}{span}_f32_{b}x{n}x{width}"
        body = [f"%p = {p} parameter(0)",
                f"%i = s32[{b},{n},{width}]{layout} iota(), iota_dimension=1",
                "%v = f32[] constant(-inf)", "%z = s32[] constant(0)",
                f"%r = {pair} reduce(%p, %i, %v, %z), dimensions={{1}}, to_apply=%sum",
                f"ROOT %g = s32[{b},{width}]{{1,0}} get-tuple-element(%r), index=1"]
        benches.append(Bench(f"{kind}_{span}", label,
                             _module(label, [p], body, f"s32[{b},{width}]{{1,0}}", _ARGMAX),
                             b * n * width * 4, "f32"))
    return Group(f"f32[{b},{n},{width}] argmax", tuple(benches))


#: The reduction-order groups: shape, reduced dims, the layout with the vectorized loop's dim
#: minor (``row_ordered``) and one with another reduced dim minor (``row_misordered``). The
#: loops nest in the listed order, the last innermost; an innermost loop of at most 64
#: iterations is unrolled whole, leaving the one around it to be vectorized.
ORDER_CASES = (((32, 64, 128), (0, 1), "{0,1,2}", "{1,0,2}"),
               ((64, 32, 128), (0, 1), "{0,1,2}", "{1,0,2}"),
               ((128, 32, 256), (0, 1), "{0,1,2}", "{1,0,2}"),
               ((32, 32, 256), (0, 2), "{2,1,0}", "{0,2,1}"))


def reduction_order_group(dims: tuple[int, ...], reduced: tuple[int, ...], ordered: str,
                          misordered: str) -> Group:
    """``f32[dims]`` summed over ``reduced`` with the vectorized loop's dim minor and with
    another reduced dim minor (both row reductions), with a base module (a group's modules
    share parameter dims; their layouts may differ)."""
    text = ",".join(map(str, dims))
    kept = [dims[d] for d in range(len(dims)) if d not in reduced]
    out = f"f32[{','.join(map(str, kept))}]{{{','.join(map(str, reversed(range(len(kept)))))}}}"
    nbytes = 4
    for d in dims:
        nbytes *= d
    one = f"f32[{','.join('1' * len(dims))}]{{{','.join(map(str, reversed(range(len(dims)))))}}}"
    benches = []
    for kind, layout in (("base", ordered), ("row_ordered", ordered),
                         ("row_misordered", misordered)):
        p = f"f32[{text}]{layout}"
        label = f"{kind}_f32_{'x'.join(map(str, dims))}_{''.join(map(str, reduced))}"
        if kind == "base":
            window = ", ".join("[0:1]" for _ in dims)
            body = [f"%p = {p} parameter(0)", f"ROOT %s = {one} slice(%p), slice={{{window}}}"]
            module = _module(label, [p], body, one)
        else:
            body = [f"%p = {p} parameter(0)", "%z = f32[] constant(0)",
                    f"ROOT %r = {out} reduce(%p, %z), dimensions={{{','.join(map(str, reduced))}}}, "
                    "to_apply=%sum"]
            module = _module(label, [p], body, out, _reducer("f32"))
        benches.append(Bench(kind, label, module, nbytes, "f32"))
    return Group(f"f32[{text}] reduce over {reduced} order", tuple(benches))


#: Layouts of ``f32[8,64,64,C]`` in the copy-rows and copy-runs groups: each kind's source
#: and result (``copy_rows``: the result's minor dim is ``C``; ``copy_wide``: both minor dims
#: have 64 elements; ``copy_rev``: the source's minor dim is ``C``; ``copy_runs``: both keep
#: ``C`` minor, the major dims move).
COPY_LAYOUTS = {"copy_rows": ("{2,3,1,0}", "{3,2,1,0}"), "copy_wide": ("{2,3,1,0}", "{1,2,3,0}"),
                "copy_rev": ("{3,2,1,0}", "{2,3,1,0}"), "copy_runs": ("{3,2,1,0}", "{3,1,2,0}")}


def copy_shapes(kind: str, extent: int) -> tuple[str, str]:
    """The source and result shapes (text) of a copy-rows or copy-runs group's ``kind``."""
    src, dst = COPY_LAYOUTS[kind]
    return f"f32[8,64,64,{extent}]{src}", f"f32[8,64,64,{extent}]{dst}"


#: Extents of the result's minor dim in the copy-rows groups.
#: 1: the copy to ``{3,2,1,0}`` moves no element (the layouts differ only in where the size-1
#: dim sits), yet its loop runs once per element (the minor dim's loop has one iteration).
ROW_EXTENTS = (1, 2, 3, 4, 6)


def copy_rows_group(extent: int) -> Group:
    """``f32[8,64,64,extent]`` laid out ``{2,3,1,0}`` copied so that ``extent`` is the result's
    minor dim (``copy_rows_<extent>``: tiles that ``extent`` bounds) and so that a 64-element
    dim is (``copy_wide_<extent>``: the same bytes moved in 8x8 tiles), with a base module of
    the same parameter."""
    shape = f"[8,64,64,{extent}]"
    p = copy_shapes("copy_rows", extent)[0]
    nbytes = 8 * 64 * 64 * extent * 4
    benches = [_copy_base(f"base_rows{extent}", p, extent)]
    benches += [_copy_bench(kind, extent) for kind in ("copy_wide", "copy_rows")]
    # The same bytes through standalone transposes of the row-major view of the operand
    # (a bitcast), reading it close: to [8,64,64,C] (runs of C, reading 256 bytes apart) and
    # to [8,C,64,64] (runs of 64).
    view = f"f32[8,64,{extent},64]{{3,2,1,0}}"
    for kind, dims, out in (("transpose_wide", "{0,2,1,3}", f"f32[8,{extent},64,64]{{3,2,1,0}}"),
                            ("transpose_rows", "{0,1,3,2}", f"f32{shape}{{3,2,1,0}}")):
        label = f"{kind}_{extent}_f32"
        body = [f"%p = {p} parameter(0)", f"%b = {view} bitcast(%p)",
                f"ROOT %t = {out} transpose(%b), dimensions={dims}"]
        benches.append(Bench(f"{kind}_{extent}", label, _module(label, [p], body, out), nbytes,
                             "f32"))
    return Group(f"f32{shape} copy rows", tuple(benches))


def _copy_base(label: str, param: str, extent: int) -> Bench:
    """The base module of a copy group: one element of the ``f32[8,64,64,extent]``
    parameter ``param`` sliced out (what running a module of that parameter costs)."""
    one = "f32[1,1,1,1]{3,2,1,0}"
    body = [f"%p = {param} parameter(0)",
            f"ROOT %s = {one} slice(%p), slice={{[0:1], [0:1], [0:1], [0:1]}}"]
    return Bench("base", label, _module(label, [param], body, one), 8 * 64 * 64 * extent * 4,
                 "f32")


def _copy_bench(kind: str, extent: int) -> Bench:
    src, dst = copy_shapes(kind, extent)
    label = f"{kind}_{extent}_f32"
    return Bench(f"{kind}_{extent}", label,
                 _module(label, [src], [f"%p = {src} parameter(0)", f"ROOT %c = {dst} copy(%p)"],
                         dst), 8 * 64 * 64 * extent * 4, "f32")


def copy_runs_group(extent: int) -> Group:
    """``f32[8,64,64,extent]{3,2,1,0}`` copied so that the source's minor dim (``extent``
    elements) becomes a 64-element dim's neighbour (``copy_rev_<extent>``: a blocked
    transpose whose tiles the short source dim bounds) and so that only major dims move
    (``copy_runs_<extent>``: ``8 * 64 * 64`` runs of ``extent`` elements), with a base module
    of the same parameter; the copy-rows group's ``copy_wide`` moves the same bytes."""
    base = _copy_base(f"base_runs{extent}", copy_shapes("copy_rev", extent)[0], extent)
    return Group(f"f32[8,64,64,{extent}] copy runs",
                 (base, *(_copy_bench(kind, extent) for kind in ("copy_rev", "copy_runs"))))


def convolution_group(batch: int = 8, size: int = 32, features: int = 16) -> Group:
    """A 3x3 same-padded NHWC convolution, all row-major, then with one array in another
    layout (XLA:CPU hands only row-major convolutions to Eigen)."""
    x = (batch, size, size, features)
    k = (3, 3, features, features)
    flops = 2 * batch * size * size * features * 9 * features
    row, nchw, kernel_other = "{3,2,1,0}", "{2,1,3,0}", "{2,3,1,0}"
    benches = []
    for kind, (xl, kl, ol) in (("conv_default", (row, row, row)),
                               ("conv_naive", (nchw, row, row)),
                               ("conv_naive", (row, kernel_other, row)),
                               ("conv_naive", (row, row, nchw))):
        label = f"{kind}_{len(benches)}_f32"
        xs, ks, os_ = (f"f32[{','.join(map(str, x))}]{xl}", f"f32[{','.join(map(str, k))}]{kl}",
                       f"f32[{','.join(map(str, x))}]{ol}")
        body = [f"%x = {xs} parameter(0)", f"%k = {ks} parameter(1)",
                f"ROOT %c = {os_} convolution(%x, %k), window={{size=3x3 pad=1_1x1_1}}, "
                "dim_labels=b01f_01io->b01f"]
        benches.append(Bench(kind, label, _module(label, [xs, ks], body, os_), flops, "f32"))
    return Group(f"conv {x}", tuple(benches))


#: The dot-form groups' (M, K, N), each with its own flop count (the fit pairs by it).
DOT_SHAPES = ((128, 128, 128), (64, 256, 256), (96, 512, 128), (256, 256, 256))


#: A dot form's layouts by letter: row-major, column-major.
DOT_LAYOUTS = {"r": "{1,0}", "c": "{0,1}"}


def dot_module(label: str, m: int, k: int, n: int, form: str, lhs_c: int = 1,
               rhs_c: int = 0) -> Module:
    """``f32`` ``lhs x rhs -> [M, N]`` contracting the lhs's dim ``lhs_c`` (``[M, K]`` for 1,
    ``[K, M]`` for 0) and the rhs's dim ``rhs_c`` (``[K, N]`` for 0, ``[N, K]`` for 1), the
    lhs, rhs and result laid out as ``form`` says (three of ``r``/``c``, in that order)."""
    ll, rl, ol = (DOT_LAYOUTS[x] for x in form)
    a = f"f32[{m},{k}]{ll}" if lhs_c == 1 else f"f32[{k},{m}]{ll}"
    b = f"f32[{k},{n}]{rl}" if rhs_c == 0 else f"f32[{n},{k}]{rl}"
    c = f"f32[{m},{n}]{ol}"
    body = [f"%a = {a} parameter(0)", f"%b = {b} parameter(1)",
            f"ROOT %d = {c} dot(%a, %b), lhs_contracting_dims={{{lhs_c}}}, "
            f"rhs_contracting_dims={{{rhs_c}}}"]
    return _module(label, [a, b], body, c)


def dot_form_group(m: int, k: int, n: int) -> Group:
    """``f32[M,K] x f32[K,N]`` in its physical nn form (lhs contracting dim minor, rhs free
    dim minor, result row-major: ``dot_nn``), with the lhs, the rhs and the result each in
    the other layout (``dot_operand`` twice, ``dot_result``); a bench's bytes are the flops."""
    benches = []
    for kind, form in (("dot_nn", "rrr"), ("dot_operand", "crr"), ("dot_operand", "rcr"),
                       ("dot_result", "rrc")):
        label = f"{kind}_{len(benches)}_f32_{m}x{k}x{n}"
        benches.append(Bench(kind, label, dot_module(label, m, k, n, form), 2 * m * k * n,
                             "f32"))
    return Group(f"dot {m}x{k}x{n}", tuple(benches))


#: Operands of the close-read transpose groups: ``f32[n,m]``, the innermost loop of the
#: transpose reading ``4m`` bytes apart.
NEAR_SHAPES = ((256, 64), (1024, 64), (4096, 64), (512, 32), (2048, 32))
#: The read stride below which the close-read groups' transposes lie (the target's
#: ``standalone_min_stride``).
NEAR_STRIDE = 512
#: The smallest operand the close-read factor holds for (the groups' smallest is 64 KiB;
#: measured at 16 KiB a standalone transpose ran 0.6-0.9x XLA's form); not fitted.
NEAR_MIN_BYTES = 32768


def near_transpose_group(n: int, m: int) -> Group:
    """``f32[n,m]{1,0}`` transposed to ``[m,n]{1,0}`` as XLA writes it (``form``: a bitcast
    transpose to ``{0,1}``, then a copy) and as a standalone ``transpose`` (``near``), with
    a base module of the same parameter."""
    p, out = f"f32[{n},{m}]{{1,0}}", f"f32[{m},{n}]{{1,0}}"
    one = "f32[1,1]{1,0}"
    bodies = {
        "base": [f"%p = {p} parameter(0)", f"ROOT %s = {one} slice(%p), slice={{[0:1], [0:1]}}"],
        "form": [f"%p = {p} parameter(0)",
                 f"%t = f32[{m},{n}]{{0,1}} transpose(%p), dimensions={{1,0}}",
                 f"ROOT %c = {out} copy(%t)"],
        "near": [f"%p = {p} parameter(0)", f"ROOT %t = {out} transpose(%p), dimensions={{1,0}}"],
    }
    benches = []
    for kind, body in bodies.items():
        label = f"{kind}_f32_{n}x{m}"
        result = one if kind == "base" else out
        benches.append(Bench(kind if kind == "base" else f"{kind}_{n}x{m}", label,
                             _module(label, [p], body, result), n * m * 4, "f32"))
    return Group(f"f32[{n},{m}] transpose", tuple(benches))


#: Operands of the major-only transpose groups: ``f32[a,b,c]``, 64 KiB to 1 MiB, rows of 16 to
#: 256 elements.
MAJOR_SHAPES = ((4, 32, 128), (64, 64, 32), (256, 16, 64), (16, 256, 64), (128, 128, 16),
                (32, 32, 256))


def major_transpose_group(a: int, b: int, c: int) -> Group:
    """``f32[a,b,c]{2,1,0}`` transposed to ``[b,a,c]{2,1,0}`` as XLA writes it (``mform``: a
    bitcast transpose to ``{2,0,1}``, then a copy) and as a standalone ``transpose``
    (``major``), with a base module of the same parameter."""
    p, out = f"f32[{a},{b},{c}]{{2,1,0}}", f"f32[{b},{a},{c}]{{2,1,0}}"
    one = "f32[1,1,1]{2,1,0}"
    bodies = {
        "base": [f"%p = {p} parameter(0)",
                 f"ROOT %s = {one} slice(%p), slice={{[0:1], [0:1], [0:1]}}"],
        "mform": [f"%p = {p} parameter(0)",
                  f"%t = f32[{b},{a},{c}]{{2,0,1}} transpose(%p), dimensions={{1,0,2}}",
                  f"ROOT %c = {out} copy(%t)"],
        "major": [f"%p = {p} parameter(0)",
                  f"ROOT %t = {out} transpose(%p), dimensions={{1,0,2}}"],
    }
    benches = []
    for kind, body in bodies.items():
        shape = f"{a}x{b}x{c}"
        label = f"{kind}_f32_{shape}"
        result = one if kind == "base" else out
        benches.append(Bench(kind if kind == "base" else f"{kind}_{shape}", label,
                             _module(label, [p], body, result), a * b * c * 4, "f32"))
    return Group(f"f32[{a},{b},{c}] major transpose", tuple(benches))


#: Elementwise ops whose in-place price is measured (others are taken as free): XLA:CPU's
#: scalar loop costs about what the vector one does for cheap ops, not for these. Measured
#: on an Intel Xeon (three runs of 15 rounds): ``select`` 3.7-4.2 ns per element more in
#: place, ``exponential-minus-one`` 7.5-10.6, ``log-plus-one`` 12.4-13.2, ``erf`` 1.8-2.8;
#: ``subtract``, ``maximum``, ``minimum``, ``power``, ``sine``, ``cosine`` and ``tan`` none.
IN_PLACE_OPS = ("exponential", "log", "tanh", "sqrt", "rsqrt", "divide", "add", "multiply",
                "select", "exponential-minus-one", "log-plus-one", "erf")
#: The same in other element types, whose scalar loop differs: f16 converts every element to
#: f32 and back (measured on an Intel Xeon: an f16 add in place 5x the one into a fresh buffer).
IN_PLACE_TYPED = (("f16", ("add", "multiply", "negate")),)


def in_place_group(op: str, n: int = 256, dtype: str = "f32") -> Group:
    """``op`` over ``a = p * p`` (``dtype[n,n]``) written over ``a``'s buffer (``inplace``:
    ``a`` dies at the op, so XLA:CPU's buffer assignment reuses it) and into a fresh one
    (``fresh``: ``a`` is also a result); both do the same work."""
    t = f"{dtype}[{n},{n}]{{1,0}}"
    args = "%a, %q" if op in ELEMENTWISE_BINARY else "%a"
    body = [f"%p = {t} parameter(0)", f"%q = {t} parameter(1)", f"%a = {t} multiply(%p, %p)"]
    if op == "select":  # its predicate computed in both modules alike
        body.append(f"%m = pred[{n},{n}]{{1,0}} compare(%p, %q), direction=GT")
        args = "%m, %a, %q"
    body.append(f"%e = {t} {op}({args})")
    both = f"({t}, {t})"
    nbytes = n * n * element_bytes(dtype)
    tag = "" if dtype == "f32" else f"{dtype}_"
    benches = (
        Bench(f"fresh_{op}", f"fresh_{tag}{op}", _module(f"fresh_{tag}{op}", [t, t], body + [
            f"ROOT %r = {both} tuple(%e, %a)"], both), nbytes, dtype),
        Bench(f"inplace_{op}", f"inplace_{tag}{op}", _module(
            f"inplace_{tag}{op}", [t, t], body[:-1] + [f"ROOT {body[-1]}"], t), nbytes, dtype),
    )
    return Group(f"{'' if dtype == 'f32' else dtype + ' '}{op} in place", benches)


#: The reduce-window groups: ``(f32 operand dims, window sizes, paddings (low, high) per dim,
#: strides, combiner)``: a cumulative sum of 16 and of 8 along one dim (``jnp.cumsum``'s
#: reduce-window form), a 3-wide sum, and NHWC 3x3 and 2x2/2 max pools.
WINDOW_CASES = (
    ((256, 256), (1, 16), ((0, 0), (15, 0)), (1, 1), "add"),
    ((1024, 64), (1, 8), ((0, 0), (7, 0)), (1, 1), "add"),
    ((256, 256), (1, 3), ((0, 0), (1, 1)), (1, 1), "add"),
    ((8, 32, 32, 32), (1, 3, 3, 1), ((0, 0), (1, 1), (1, 1), (0, 0)), (1, 1, 1, 1), "maximum"),
    ((8, 48, 48, 32), (1, 2, 2, 1), ((0, 0),) * 4, (1, 2, 2, 1), "maximum"),
)


def window_group(dims: tuple[int, ...], sizes: tuple[int, ...],
                 pads: tuple[tuple[int, int], ...], strides: tuple[int, ...],
                 combiner: str) -> Group:
    """A ``reduce-window`` of ``f32[dims]`` with its windowed dims major and a dim without a
    window physically minor (``window_plain``), and with a windowed dim minor
    (``window_minor``); a bench's bytes are the elements its windows read (result elements
    times window elements)."""
    out = tuple((d + lo + hi - s) // st + 1 for d, s, (lo, hi), st in zip(dims, sizes, pads,
                                                                          strides))
    plain = [d for d in range(len(dims)) if sizes[d] == 1]
    windowed = [d for d in range(len(dims)) if sizes[d] > 1]
    fast = tuple(reversed([*windowed, *plain]))
    slow = tuple(reversed([*plain, *windowed]))
    window = (f"size={'x'.join(map(str, sizes))} stride={'x'.join(map(str, strides))} "
              f"pad={'x'.join(f'{lo}_{hi}' for lo, hi in pads)}")
    init = "0" if combiner == "add" else "-inf"
    reducer = _MAX if combiner == "maximum" else _reducer("f32")
    reads = math.prod(out) * math.prod(sizes)
    name = "x".join(map(str, dims))
    benches = []
    for kind, order in (("window_plain", fast), ("window_minor", slow)):
        layout = "{" + ",".join(map(str, order)) + "}"
        p = f"f32[{','.join(map(str, dims))}]{layout}"
        result = f"f32[{','.join(map(str, out))}]{layout}"
        label = f"{kind}_{combiner}_{name}_{'x'.join(map(str, sizes))}"
        body = [f"%p = {p} parameter(0)", f"%z = f32[] constant({init})",
                f"ROOT %r = {result} reduce-window(%p, %z), window={{{window}}}, to_apply=%sum"]
        benches.append(Bench(kind, label, _module(label, [p], body, result, reducer), reads,
                             "f32"))
    return Group(f"f32[{name}] reduce-window {'x'.join(map(str, sizes))}", tuple(benches))


def groups(quick: bool = False, platform: str = "cpu") -> list[Group]:
    """Every group, smallest first; ``quick``: one dtype and the two smaller sizes. A
    ``platform`` other than ``cpu`` gets :func:`device_groups`."""
    if platform != "cpu":
        return device_groups(quick)
    sizes = SIZES[:2] if quick else SIZES
    dtypes = DTYPES[:1] if quick else DTYPES
    out = [matrix_group(t, n, m) for t in dtypes for n, m in sizes]
    out += [major_group("f32", n, m) for n, m in sizes]
    out += [binary_group("f32", n) for n in (256, 512)[: 1 if quick else 2]]
    out += [reduction_group(r) for r in (STRIDED_EXTENTS[1::2] if quick else STRIDED_EXTENTS)]
    out += [reduction_group(r, SMALL_ELEMENTS, small=True)
            for r in (SMALL_EXTENTS[1:2] if quick else SMALL_EXTENTS)]
    out += [variadic_span_group(w) for w in (SPAN_WIDTHS[2::2] if quick else SPAN_WIDTHS)]
    out += [reduction_order_group(*case) for case in (ORDER_CASES[1:2] if quick else ORDER_CASES)]
    out += [copy_rows_group(c) for c in (ROW_EXTENTS[2:3] if quick else ROW_EXTENTS)]
    out += [copy_runs_group(c) for c in (ROW_EXTENTS[2:3] if quick else ROW_EXTENTS[1:])]
    out += [near_transpose_group(n, m) for n, m in (NEAR_SHAPES[:1] if quick else NEAR_SHAPES)]
    out += [major_transpose_group(*s) for s in (MAJOR_SHAPES[:1] if quick else MAJOR_SHAPES)]
    out += [in_place_group(op) for op in (IN_PLACE_OPS[:1] if quick else IN_PLACE_OPS)]
    out += [in_place_group(op, dtype=t) for t, ops in ([] if quick else IN_PLACE_TYPED)
            for op in ops]
    out.append(copy_overhead_group())
    out += [dot_form_group(*s) for s in (DOT_SHAPES[1:2] if quick else DOT_SHAPES)]
    out += [window_group(*case) for case in (WINDOW_CASES[:1] if quick else WINDOW_CASES)]
    out.append(convolution_group())
    return out


#: Operand sizes on an accelerator: large enough that the op, not the host's dispatch of the
#: module (40-110 us, varying by +-10 us from module to module on an H200), dominates (f32:
#: 64 MiB to 512 MiB; measured at 16 MiB a copy's own time drowned in that noise).
DEVICE_SIZES = ((4096, 4096), (8192, 8192), (16384, 8192))
#: Column/row reduction extents on an accelerator (``reduction_group`` over 2**26 elements).
DEVICE_EXTENTS = (16, 128, 1024, 8192)


def device_groups(quick: bool = False) -> list[Group]:
    """The groups for an accelerator backend (run with their entry layouts pinned through
    XLA's whole pipeline): the movement kinds at :data:`DEVICE_SIZES` (f32; the other dtypes
    at the middle size), 3-D major-only copies, ``add``/``dot`` with one operand in another
    layout (f32, and bf16 at the larger size), column and row reductions, NHWC against NCHW
    convolutions, and the cost of one more kernel (:func:`kernel_group`)."""
    sizes = DEVICE_SIZES[:2] if quick else DEVICE_SIZES
    out = [matrix_group("f32", n, m, bitcast=False) for n, m in sizes]
    if not quick:
        out += [matrix_group(t, *DEVICE_SIZES[1], bitcast=False) for t in DTYPES[1:]]
    out += [major_group("f32", n, m) for n, m in sizes]
    out += [binary_group("f32", n, (op,)) for n, _ in sizes[:2] for op in ("add", "dot")]
    if not quick:
        out += [binary_group("bf16", DEVICE_SIZES[1][0], (op,)) for op in ("add", "dot")]
    out += [reduction_group(r, 1 << 26)
            for r in (DEVICE_EXTENTS[::2] if quick else DEVICE_EXTENTS)]
    out += [layout_convolution_group(t) for t in ("f32", "bf16")[: 1 if quick else 2]]
    out.append(kernel_group())
    return out


def layout_convolution_group(t: str, batch: int = 64, size: int = 64,
                             features: int = 64) -> Group:
    """A 3x3 same-padded convolution whose input and result are NHWC (``conv_nhwc``) or
    NCHW (``conv_nchw``), the kernel ``HWIO`` row-major; ``bytes`` is the input's (what the
    transpose to the other form moves)."""
    x = f"{t}[{batch},{size},{size},{features}]"
    kernel = f"{t}[3,3,{features},{features}]{{3,2,1,0}}"
    nbytes = batch * size * size * features * _BYTES[t]
    benches = []
    for kind, layout in (("conv_nhwc", "{3,2,1,0}"), ("conv_nchw", "{2,1,3,0}")):
        label = f"{kind}_{t}"
        xs = f"{x}{layout}"
        body = [f"%x = {xs} parameter(0)", f"%k = {kernel} parameter(1)",
                f"ROOT %c = {xs} convolution(%x, %k), window={{size=3x3 pad=1_1x1_1}}, "
                "dim_labels=b01f_01io->b01f"]
        benches.append(Bench(kind, label, _module(label, [xs, kernel], body, xs), nbytes, t))
    return Group(f"conv {t} NHWC/NCHW", tuple(benches))


#: Copies in :func:`copy_overhead_group`'s chain.
OVERHEAD_COPIES = 32


def copy_overhead_group(n: int = 4, m: int = 8, copies: int = OVERHEAD_COPIES) -> Group:
    """What a copy costs beyond the bytes it moves (its thunk): ``f32[n,m]`` negated twice
    (``copies_none``), against the same with a chain of ``copies`` copies between the two,
    each moving the minor dim (``{1,0}`` and ``{0,1}`` in turn, so that none is a no-op);
    the data too small to matter. Measured on an Intel Xeon: 64-96 ns per copy (three
    runs), which the copy line, fitted through the base module's time, cannot show."""
    shape = f"f32[{n},{m}]"
    layouts = ("{1,0}", "{0,1}")
    p = f"{shape}{layouts[0]}"
    chain = [f"%c{i + 1} = {shape}{layouts[(i + 1) % 2]} copy(%c{i})" for i in range(copies)]
    last = f"%c{copies}"
    if copies % 2:
        chain.append(f"%c{copies + 1} = {p} copy({last})")
        last = f"%c{copies + 1}"
    benches = []
    for kind, body in (("copies_none", []), ("copies_chain", chain)):
        src = last if body else "%c0"
        lines = [f"%p = {p} parameter(0)", f"%c0 = {p} negate(%p)", *body,
                 f"ROOT %r = {p} negate({src})"]
        benches.append(Bench(kind, f"{kind}_f32", _module(f"{kind}_f32", [p], lines, p),
                             n * m * 4, "f32"))
    return Group(f"{shape} copy overhead", tuple(benches))


def kernel_group(n: int = 8, m: int = 128) -> Group:
    """What one more kernel costs inside a module: ``f32[n,m]`` summed to a scalar
    (``kernel_one``), against that sum, then the operand scaled by it and summed again
    (``kernel_two``: the second reduction needs the first one's result, so it runs as a
    kernel of its own), the data too small to matter."""
    p = f"f32[{n},{m}]{{1,0}}"
    body_one = [f"%p = {p} parameter(0)", "%z = f32[] constant(0)",
                "ROOT %r = f32[] reduce(%p, %z), dimensions={0,1}, to_apply=%sum"]
    body_two = [f"%p = {p} parameter(0)", "%z = f32[] constant(0)",
                "%r = f32[] reduce(%p, %z), dimensions={0,1}, to_apply=%sum",
                f"%b = {p} broadcast(%r), dimensions={{}}",
                f"%q = {p} multiply(%p, %b)",
                "ROOT %s = f32[] reduce(%q, %z), dimensions={0,1}, to_apply=%sum"]
    benches = [Bench(kind, f"{kind}_f32", _module(f"{kind}_f32", [p], body, "f32[]",
                                                 _reducer("f32")), n * m * 4, "f32")
               for kind, body in (("kernel_one", body_one), ("kernel_two", body_two))]
    return Group(f"f32[{n},{m}] kernels", tuple(benches))
