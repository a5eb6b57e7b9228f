"""Shape inference against independent oracles.

Oracles: JAX's own shape rules (``jax.eval_shape`` traces abstractly, nothing is
compiled or run by XLA), numpy slicing/einsum, and brute-force window counting.
Instructions are built directly from IR values so these tests do not depend on
the parser.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hlo.errors import VerifyError
from hlo.ir import (
    Computation,
    ComputationRef,
    ConvDimLabels,
    Instruction,
    PaddingConfig,
    PaddingDim,
    SliceRange,
    Window,
    WindowDim,
)
from hlo.shape import ArrayShape, TupleShape
from hlo.shape_inference import compatible, infer_shape, operand_count_problem
from hlo.shape_inference.contraction import window_output_size

import jax  # noqa: E402  (the oracle; a test dependency)
lax = jax.lax
jnp = jax.numpy

SETTINGS = settings(max_examples=40, deadline=None)


def f32(*dims: int) -> ArrayShape:
    return ArrayShape("f32", tuple(dims))


def instr(opcode: str, shape, operands=(), **attrs) -> Instruction:
    names = tuple(f"x{i}" for i in range(len(operands)))
    return Instruction("r", opcode, shape, names, tuple(attrs.items()))


def infer(opcode: str, operands, result=None, comps=(), **attrs):
    lookup = {c.name: c for c in comps}.__getitem__
    return infer_shape(instr(opcode, result or f32(), operands, **attrs), tuple(operands), lookup)


def scalar_add(name: str = "add", etype: str = "f32", n: int = 1) -> Computation:
    s = ArrayShape(etype, ())
    params = tuple(Instruction(f"p{i}", "parameter", s, (), (("parameter_number", i),))
                   for i in range(2 * n))
    outs = tuple(Instruction(f"a{i}", "add", s, (f"p{i}", f"p{i + n}")) for i in range(n))
    body = params + outs
    if n > 1:
        body += (Instruction("t", "tuple", TupleShape(tuple(s for _ in range(n))),
                             tuple(o.name for o in outs)),)
    return Computation(name, body, body[-1].name)


def jshape(dims):
    return jax.ShapeDtypeStruct(tuple(dims), jnp.float32)


# ---------------------------------------------------------------------------
# Window arithmetic: brute force
# ---------------------------------------------------------------------------


@SETTINGS
@given(size=st.integers(0, 12), w=st.integers(1, 4), stride=st.integers(1, 3),
       lo=st.integers(-2, 3), hi=st.integers(-2, 3), bd=st.integers(1, 3), wd=st.integers(1, 3))
def test_window_output_size_counts_window_positions(size, w, stride, lo, hi, bd, wd):
    # Positions of the dilated, padded base; a window start is valid when all its
    # taps fall inside the padded range.
    dilated = (size - 1) * bd + 1 if size else 0
    padded = dilated + lo + hi
    taps = (w - 1) * wd + 1
    count = sum(1 for start in range(0, max(padded, 0), stride) if start + taps <= padded)
    assert window_output_size(size, WindowDim(w, stride, lo, hi, bd, wd)) == count


# ---------------------------------------------------------------------------
# Movement ops: numpy / JAX
# ---------------------------------------------------------------------------


@SETTINGS
@given(data=st.data())
def test_slice_matches_numpy(data):
    dims = data.draw(st.lists(st.integers(0, 7), min_size=1, max_size=3))
    ranges = []
    for d in dims:
        start = data.draw(st.integers(0, d))
        limit = data.draw(st.integers(start, d))
        ranges.append(SliceRange(start, limit, data.draw(st.integers(1, 3))))
    expected = np.empty(dims)[tuple(slice(r.start, r.limit, r.stride) for r in ranges)].shape
    assert infer("slice", [f32(*dims)], slice=tuple(ranges)) == f32(*expected)


@SETTINGS
@given(data=st.data())
def test_pad_matches_jax(data):
    dims = data.draw(st.lists(st.integers(0, 5), min_size=1, max_size=3))
    config = [(data.draw(st.integers(-2, 3)), data.draw(st.integers(-2, 3)),
               data.draw(st.integers(0, 2))) for _ in dims]
    try:
        expected = jax.eval_shape(lambda x: lax.pad(x, 0.0, config), jshape(dims)).shape
    except (TypeError, ValueError):
        with pytest.raises(VerifyError):
            infer("pad", [f32(*dims), f32()],
                  padding=PaddingConfig(tuple(PaddingDim(*c) for c in config)))
        return
    got = infer("pad", [f32(*dims), f32()],
                padding=PaddingConfig(tuple(PaddingDim(*c) for c in config)))
    assert got == f32(*expected)


@SETTINGS
@given(data=st.data())
def test_dot_matches_einsum(data):
    nb, nc = data.draw(st.integers(0, 2)), data.draw(st.integers(0, 2))
    batch = data.draw(st.lists(st.integers(1, 3), min_size=nb, max_size=nb))
    contract = data.draw(st.lists(st.integers(1, 3), min_size=nc, max_size=nc))
    lfree = data.draw(st.lists(st.integers(1, 3), max_size=2))
    rfree = data.draw(st.lists(st.integers(1, 3), max_size=2))
    # Random placement of the batch/contracting dims inside each operand.
    lorder = data.draw(st.permutations(["b"] * nb + ["c"] * nc + ["f"] * len(lfree)))
    rorder = data.draw(st.permutations(["b"] * nb + ["c"] * nc + ["f"] * len(rfree)))

    def build(order, free):
        it = {"b": iter(enumerate(batch)), "c": iter(enumerate(contract)), "f": iter(free)}
        dims, bdims, cdims, letters = [], [], [], []
        for pos, kind in enumerate(order):
            if kind == "f":
                dims.append(next(it["f"]))
                letters.append(None)
            else:
                k, size = next(it[kind])
                dims.append(size)
                (bdims if kind == "b" else cdims).append((k, pos))
                letters.append((kind, k))
        return dims, [p for _, p in sorted(bdims)], [p for _, p in sorted(cdims)], letters

    ldims, lb, lc, ll = build(lorder, lfree)
    rdims, rb, rc, rl = build(rorder, rfree)
    names = iter("abcdefghijklmnop")
    sym = {key: next(names) for key in set(ll + rl) if key is not None}
    lsub = "".join(sym[k] if k else next(names) for k in ll)
    rsub = "".join(sym[k] if k else next(names) for k in rl)
    out = ("".join(sym[("b", k)] for k in range(nb))
           + "".join(c for c, k in zip(lsub, ll) if k is None)
           + "".join(c for c, k in zip(rsub, rl) if k is None))
    expected = np.einsum(f"{lsub},{rsub}->{out}", np.zeros(ldims), np.zeros(rdims)).shape
    got = infer("dot", [f32(*ldims), f32(*rdims)], lhs_batch_dims=tuple(lb),
                rhs_batch_dims=tuple(rb), lhs_contracting_dims=tuple(lc),
                rhs_contracting_dims=tuple(rc))
    assert got == f32(*expected)


@SETTINGS
@given(data=st.data())
def test_convolution_matches_jax(data):
    spatial = data.draw(st.integers(1, 2))
    fgc = data.draw(st.integers(1, 2))
    bgc = 1 if fgc > 1 else data.draw(st.integers(1, 2))
    batch = bgc * data.draw(st.integers(1, 2))
    k_in = data.draw(st.integers(1, 2))
    k_out = fgc * bgc * data.draw(st.integers(1, 2))
    sizes = data.draw(st.lists(st.integers(1, 6), min_size=spatial, max_size=spatial))
    kernel = data.draw(st.lists(st.integers(1, 3), min_size=spatial, max_size=spatial))
    strides = data.draw(st.lists(st.integers(1, 2), min_size=spatial, max_size=spatial))
    pads = data.draw(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2)),
                              min_size=spatial, max_size=spatial))
    lhs_dil = data.draw(st.lists(st.integers(1, 2), min_size=spatial, max_size=spatial))
    rhs_dil = data.draw(st.lists(st.integers(1, 2), min_size=spatial, max_size=spatial))
    lhs = (batch, k_in * fgc, *sizes)
    rhs = (k_out, k_in, *kernel)
    sp = "HW"[:spatial]
    dn = ("NC" + sp, "OI" + sp, "NC" + sp)
    expected = jax.eval_shape(
        lambda x, y: lax.conv_general_dilated(
            x, y, strides, pads, lhs_dil, rhs_dil, dn, feature_group_count=fgc,
            batch_group_count=bgc),
        jshape(lhs), jshape(rhs)).shape
    labels = ConvDimLabels(0, 1, tuple(range(2, 2 + spatial)), 1, 0, tuple(range(2, 2 + spatial)),
                           0, 1, tuple(range(2, 2 + spatial)))
    window = Window(tuple(WindowDim(k, s, lo, hi, ld, rd) for k, s, (lo, hi), ld, rd
                          in zip(kernel, strides, pads, lhs_dil, rhs_dil)))
    got = infer("convolution", [f32(*lhs), f32(*rhs)], dim_labels=labels, window=window,
                feature_group_count=fgc, batch_group_count=bgc)
    assert got == f32(*expected)


@SETTINGS
@given(data=st.data())
def test_reduce_window_matches_jax(data):
    dims = data.draw(st.lists(st.integers(1, 6), min_size=1, max_size=3))
    r = len(dims)
    win = [data.draw(st.integers(1, 3)) for _ in dims]
    strides = [data.draw(st.integers(1, 2)) for _ in dims]
    pads = [(data.draw(st.integers(0, 2)), data.draw(st.integers(0, 2))) for _ in dims]
    bd = [data.draw(st.integers(1, 2)) for _ in dims]
    wd = [data.draw(st.integers(1, 2)) for _ in dims]
    expected = jax.eval_shape(
        lambda x: lax.reduce_window(x, 0.0, lax.add, win, strides, pads, bd, wd),
        jshape(dims)).shape
    window = Window(tuple(WindowDim(*args) for args in zip(win, strides, [p[0] for p in pads],
                                                              [p[1] for p in pads], bd, wd)))
    got = infer("reduce-window", [f32(*dims), f32()], comps=[scalar_add()], window=window,
                to_apply=ComputationRef("add"))
    assert got == f32(*expected)
    assert r == len(got.dims)


@SETTINGS
@given(data=st.data())
def test_gather_matches_jax(data):
    dims = data.draw(st.lists(st.integers(1, 5), min_size=1, max_size=3))
    r = len(dims)
    start_map = data.draw(st.lists(st.integers(0, r - 1), min_size=1, max_size=r, unique=True))
    collapsed = sorted(data.draw(st.sets(st.sampled_from(start_map))))
    slice_sizes = [1 if d in collapsed else data.draw(st.integers(0, dims[d])) for d in range(r)]
    batch = data.draw(st.lists(st.integers(1, 3), max_size=2))
    out_rank = len(batch) + r - len(collapsed)
    offset_dims = sorted(data.draw(st.permutations(range(out_rank)))[:r - len(collapsed)])
    indices = (*batch, len(start_map))
    dnums = lax.GatherDimensionNumbers(tuple(offset_dims), tuple(collapsed), tuple(start_map))
    expected = jax.eval_shape(
        lambda x, i: lax.gather(x, i, dnums, tuple(slice_sizes),
                                mode=lax.GatherScatterMode.PROMISE_IN_BOUNDS),
        jshape(dims), jax.ShapeDtypeStruct(indices, jnp.int32)).shape
    got = infer("gather", [f32(*dims), ArrayShape("s32", indices)],
                offset_dims=tuple(offset_dims), collapsed_slice_dims=tuple(collapsed),
                start_index_map=tuple(start_map), index_vector_dim=len(batch),
                slice_sizes=tuple(slice_sizes))
    assert got == f32(*expected)


def test_concatenate_rejects_mismatched_other_dims():
    # The shape of XLA's tools/tests/data/invalid_concat.hlo.
    with pytest.raises(VerifyError, match="differ in dim 0"):
        infer("concatenate", [f32(2, 1), f32(3, 1)], dimensions=(1,))
    assert infer("concatenate", [f32(2, 1), f32(3, 1)], dimensions=(0,)) == f32(5, 1)


@pytest.mark.parametrize("dims,perm", [((2, 3, 4), (2, 0, 1)), ((5,), (0,)), ((1, 2), (1, 0))])
def test_transpose_matches_numpy(dims, perm):
    assert infer("transpose", [f32(*dims)], dimensions=perm) == f32(
        *np.transpose(np.empty(dims), perm).shape)


def test_broadcast_checks_mapped_dims():
    assert compatible(infer("broadcast", [f32(3)], f32(2, 3), dimensions=(1,)), f32(2, 3))
    with pytest.raises(VerifyError, match="operand dim 0"):
        infer("broadcast", [f32(3)], f32(3, 2), dimensions=(1,))


def test_bitcast_convert_widths():
    s16 = ArrayShape("s16", (4, 2))
    assert infer("bitcast-convert", [f32(4)], s16) == s16
    assert infer("bitcast-convert", [s16], f32(4)) == f32(4)
    with pytest.raises(VerifyError):
        infer("bitcast-convert", [ArrayShape("s16", (4, 3))], f32(4))


def test_reduce_variadic_and_types():
    add2 = scalar_add("add2", n=2)
    out = infer("reduce", [f32(4, 5), f32(4, 5), f32(), f32()], comps=[add2], dimensions=(1,),
                to_apply=ComputationRef("add2"))
    assert out == TupleShape((f32(4), f32(4)))
    with pytest.raises(VerifyError, match="must take 2"):
        infer("reduce", [f32(4, 5), f32()], comps=[add2], dimensions=(1,),
              to_apply=ComputationRef("add2"))


def test_elementwise_rejects_implicit_broadcast_and_mixed_types():
    with pytest.raises(VerifyError, match="no implicit broadcast"):
        infer("add", [f32(2, 3), f32(3)])
    with pytest.raises(VerifyError, match="one element type"):
        infer("add", [f32(2), ArrayShape("bf16", (2,))])
    assert infer("compare", [f32(2), f32(2)], direction="LT") == ArrayShape("pred", (2,))


def test_operand_counts():
    assert operand_count_problem("add", 2) is None
    assert "takes 2" in operand_count_problem("add", 3)
    assert "N inputs and N init values, got 3" in operand_count_problem("reduce", 3)
    assert "takes at least 2" in operand_count_problem("reduce", 1)
    assert operand_count_problem("reduce", 4) is None
    assert "the indices and N updates, got 4" in operand_count_problem("scatter", 4)
    assert operand_count_problem("scatter", 5) is None
    assert operand_count_problem("tuple", 0) is None


def test_every_combination_of_compatible():
    shapes = [f32(2), ArrayShape("f32", (2,), None), ArrayShape("s32", (2,)), f32(2, 1),
              TupleShape((f32(2),))]
    for a, b in itertools.product(shapes, repeat=2):
        same = (isinstance(a, ArrayShape) and isinstance(b, ArrayShape)
                and a.element_type == b.element_type and a.dims == b.dims) or a == b
        assert compatible(a, b) == same
