"""The interpreter fails only with an ``InterpretError`` naming the instruction, never a Python error.

Modules are generated: chains of instructions over random small shapes, each instruction built with
its correct result shape and then, sometimes, broken on purpose (a wrong result dimension, an
out-of-range attribute). Whatever the module, evaluation either returns or raises an ``HloError``;
a failure inside an instruction names that instruction and its line.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hlo.errors import HloError
from hlo.interpreter import InterpretError, evaluate
from hlo.parser import parse_module

TYPES = ("f32", "bf16", "s32", "pred", "f64")
UNARY = ("negate", "exponential", "log", "sqrt", "rsqrt", "tanh", "abs", "sign", "floor", "not",
         "cosine", "is-finite", "popcnt", "clz")
BINARY = ("add", "subtract", "multiply", "divide", "remainder", "maximum", "power", "and", "atan2",
          "shift-left")


def _shape(ty: str, dims: tuple[int, ...]) -> str:
    return f"{ty}[{','.join(map(str, dims))}]"


@st.composite
def _instruction(draw, values: list[tuple[str, str, tuple[int, ...]]], n: int):
    """(text, type, dims) of instruction number ``n`` over earlier ``values``."""
    name, ty, dims = draw(st.sampled_from(values))
    kind = draw(st.sampled_from(("unary", "binary", "dot", "transpose", "reshape", "broadcast",
                                 "reduce", "slice", "concatenate", "convert", "reverse", "iota")))
    me = f"v{n}"
    if kind == "unary":
        out, text = (ty, dims), f"{draw(st.sampled_from(UNARY))}({name})"
    elif kind == "binary":
        other = draw(st.sampled_from([v for v in values if v[2] == dims] or [values[0]]))
        out, text = (ty, dims), f"{draw(st.sampled_from(BINARY))}({name}, {other[0]})"
    elif kind == "dot":
        other = draw(st.sampled_from(values))
        lc = draw(st.integers(0, max(len(dims) - 1, 0)))
        rc = draw(st.integers(0, max(len(other[2]) - 1, 0)))
        free_l = [d for i, d in enumerate(dims) if i != lc]
        free_r = [d for i, d in enumerate(other[2]) if i != rc]
        out = (ty, (*free_l, *free_r))
        text = f"dot({name}, {other[0]}), lhs_contracting_dims={{{lc}}}, rhs_contracting_dims={{{rc}}}"
    elif kind == "transpose":
        perm = draw(st.permutations(range(len(dims))))
        out = (ty, tuple(dims[p] for p in perm))
        text = f"transpose({name}), dimensions={{{','.join(map(str, perm))}}}"
    elif kind == "reshape":
        size = int(np.prod(dims, dtype=np.int64))
        out, text = (ty, draw(st.sampled_from([(size,), (1, size), (size, 1), ()]))), f"reshape({name})"
    elif kind == "broadcast":
        extra = draw(st.integers(1, 3))
        out = (ty, (extra, *dims))
        text = f"broadcast({name}), dimensions={{{','.join(str(i + 1) for i in range(len(dims)))}}}"
    elif kind == "reduce":
        axis = draw(st.integers(0, max(len(dims) - 1, 0)))
        out = (ty, tuple(d for i, d in enumerate(dims) if i != axis))
        text = f"reduce({name}, z_{ty}), dimensions={{{axis}}}, to_apply=add_{ty}"
    elif kind == "slice":
        out = (ty, tuple(max(d - 1, 0) for d in dims))
        text = f"slice({name}), slice={{{','.join(f'[1:{d}]' for d in dims)}}}"
    elif kind == "concatenate":
        axis = draw(st.integers(0, max(len(dims) - 1, 0)))
        out = (ty, tuple(2 * d if i == axis else d for i, d in enumerate(dims)))
        text = f"concatenate({name}, {name}), dimensions={{{axis}}}"
    elif kind == "convert":
        new = draw(st.sampled_from(TYPES))
        out, text = (new, dims), f"convert({name})"
    elif kind == "reverse":
        out, text = (ty, dims), f"reverse({name}), dimensions={{{','.join(map(str, range(len(dims))))}}}"
    else:
        out, text = (ty, (3, 2)), "iota(), iota_dimension=1"
    out_ty, out_dims = out
    if draw(st.integers(0, 4)) == 0:  # break it on purpose
        out_dims = tuple(draw(st.lists(st.integers(0, 5), min_size=0, max_size=3)))
        text = text.replace("={1}", "={7}")
    return f"  {me} = {_shape(out_ty, out_dims)} {text}", (me, out_ty, tuple(out_dims))


@st.composite
def modules(draw):
    params = []
    values: list[tuple[str, str, tuple[int, ...]]] = []
    for i in range(draw(st.integers(1, 2))):
        ty = draw(st.sampled_from(TYPES))
        dims = tuple(draw(st.lists(st.integers(1, 4), min_size=0, max_size=3)))
        params.append(f"  p{i} = {_shape(ty, dims)} parameter({i})")
        values.append((f"p{i}", ty, dims))
    lines = list(params)
    for n in range(draw(st.integers(1, 6))):
        line, value = draw(_instruction(values, n))
        lines.append(line)
        values.append(value)
    last = values[-1]
    lines[-1] = lines[-1].replace(f"  {last[0]} =", f"  ROOT {last[0]} =", 1)
    reducers = "\n".join(
        f"add_{t} {{\n  a = {t}[] parameter(0)\n  b = {t}[] parameter(1)\n  ROOT s = {t}[] "
        f"{'or' if t == 'pred' else 'add'}(a, b)\n}}\n" for t in TYPES
    )
    zeros = "\n".join(f"  z_{t} = {t}[] constant({'false' if t == 'pred' else 0})" for t in TYPES)
    body = "\n".join([lines[0], zeros, *lines[1:]]) if params else "\n".join(lines)
    return f"HloModule fuzz\n\n{reducers}\nENTRY e {{\n{body}\n}}\n", values[: len(params)]


def _arguments(params, rng):
    out = []
    for _, ty, dims in params:
        if ty == "pred":
            out.append(rng.integers(0, 2, dims).astype(bool))
        elif ty == "s32":
            out.append(rng.integers(-5, 5, dims).astype(np.int32))
        else:
            from hlo.interpreter import dtype_of

            out.append(rng.standard_normal(dims).astype(dtype_of(ty)))
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(modules(), st.integers(0, 2**16))
def test_generated_modules_fail_only_with_located_errors(case, seed):
    text, params = case
    try:
        module = parse_module(text, "fuzz.hlo")
    except HloError:
        return
    try:
        evaluate(module, _arguments(params, np.random.default_rng(seed)))
    except InterpretError as err:
        message = err.message
        assert "Error:" not in message and "Traceback" not in message, message
        if "'" in message and "(line " in message:
            name = message.split("'")[1]
            assert name in text
    # Anything that is not an HloError propagates and fails the test.


def test_scalar_dot_inside_a_while_loop():
    """A vector-vector dot (rank-0 result) in a loop body, as ``lax.fori_loop`` emits it."""
    text = """HloModule loop

body {
  s = (s32[], f32[], f32[8], f32[8]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  c = f32[] get-tuple-element(s), index=1
  v = f32[8] get-tuple-element(s), index=2
  w = f32[8] get-tuple-element(s), index=3
  one = s32[] constant(1)
  j = s32[] add(i, one)
  half = f32[] constant(0.5)
  h = f32[] multiply(c, half)
  d = f32[] dot(v, w), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  n = f32[] add(h, d)
  ROOT t = (s32[], f32[], f32[8], f32[8]) tuple(j, n, v, w)
}

cond {
  s = (s32[], f32[], f32[8], f32[8]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  three = s32[] constant(3)
  ROOT lt = pred[] compare(i, three), direction=LT
}

ENTRY e {
  v = f32[8] parameter(0)
  w = f32[8] parameter(1)
  zero = s32[] constant(0)
  c0 = f32[] constant(0)
  init = (s32[], f32[], f32[8], f32[8]) tuple(zero, c0, v, w)
  loop = (s32[], f32[], f32[8], f32[8]) while(init), condition=cond, body=body
  ROOT r = f32[] get-tuple-element(loop), index=1
}
"""
    v = np.arange(8, dtype=np.float32)
    w = np.ones(8, np.float32)
    got = evaluate(parse_module(text, "loop.hlo"), [v, w])
    want = 0.0
    for _ in range(3):
        want = want * 0.5 + float(v @ w)
    assert got.dtype == np.float32 and float(got) == want


def test_a_called_computation_with_the_wrong_arity_names_the_caller():
    text = """HloModule m

two {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = f32[] parameter(2)
  ROOT s = f32[] add(a, b)
}

ENTRY e {
  x = f32[4] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[] reduce(x, z), dimensions={0}, to_apply=two
}
"""
    try:
        evaluate(parse_module(text, "m.hlo"), [np.ones(4, np.float32)])
    except InterpretError as err:
        assert err.message.startswith("reduce 'r' (line 13): "), err.message
        assert "takes 3 arguments, got 2" in err.message
    else:
        raise AssertionError("a reducer of three parameters ran")
