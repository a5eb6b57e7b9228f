"""Elementwise and data-movement opcodes against hand-checked expectations."""

from __future__ import annotations

import dataclasses

import ml_dtypes
import numpy as np
import pytest

from hlo.interpreter import InterpretError, evaluate
from hlo.parser import parse_module


def run(body: str, *args, comps: str = ""):
    """Run an ENTRY computation made of ``body`` lines on ``args``."""
    text = f"HloModule t\n\n{comps}\nENTRY e {{\n{body}\n}}\n"
    return evaluate(parse_module(text, "t.hlo"), list(args))


def binary(op: str, ty: str, a, b, extra: str = ""):
    n = len(a)
    out_ty = "pred" if op == "compare" else ty
    return run(
        f"  a = {ty}[{n}] parameter(0)\n  b = {ty}[{n}] parameter(1)\n"
        f"  ROOT r = {out_ty}[{n}] {op}(a, b){extra}",
        np.array(a, dtype=_np(ty)), np.array(b, dtype=_np(ty)),
    )


def _np(ty: str):
    return {"s8": np.int8, "s32": np.int32, "u8": np.uint8, "u32": np.uint32, "s64": np.int64,
            "f32": np.float32, "bf16": ml_dtypes.bfloat16, "pred": np.bool_, "f16": np.float16}[ty]


INT_MIN = -(2**31)


def test_integer_division_follows_xla():
    got = binary("divide", "s32", [7, -7, 7, 5, INT_MIN, INT_MIN], [2, 2, -2, 0, -1, 0])
    # truncation toward zero; x/0 = -1; INT_MIN/-1 = INT_MIN
    assert got.tolist() == [3, -3, -3, -1, INT_MIN, -1]
    got = binary("divide", "u8", [7, 5], [2, 0])
    assert got.tolist() == [3, 255]


def test_integer_remainder_follows_xla():
    got = binary("remainder", "s32", [7, -7, 7, 5, INT_MIN], [2, 2, -2, 0, -1])
    # the sign of the dividend; x%0 = x; INT_MIN % -1 = 0
    assert got.tolist() == [1, -1, 1, 5, 0]
    assert binary("remainder", "f32", [5.5, -5.5], [2.0, 2.0]).tolist() == [1.5, -1.5]


def test_integer_arithmetic_wraps():
    assert binary("add", "s8", [127, -128], [1, -1]).tolist() == [-128, 127]
    assert binary("multiply", "u8", [16], [17]).tolist() == [16]  # 272 mod 256
    got = run("  a = s32[2] parameter(0)\n  ROOT r = s32[2] negate(a)", np.array([INT_MIN, 5], np.int32))
    assert got.tolist() == [INT_MIN, -5]
    got = run("  a = s32[1] parameter(0)\n  ROOT r = s32[1] abs(a)", np.array([INT_MIN], np.int32))
    assert got.tolist() == [INT_MIN]


def test_shifts_out_of_range():
    a, b = [1, -8, -8, 3], [3, 1, 40, -1]
    assert binary("shift-left", "s32", a, b).tolist() == [8, -16, 0, 0]
    assert binary("shift-right-arithmetic", "s32", a, b).tolist() == [0, -4, -1, 0]
    assert binary("shift-right-logical", "s32", a, b).tolist() == [0, 0x7FFFFFFC, 0, 0]
    assert binary("shift-right-logical", "u8", [0x80, 0x80], [7, 8]).tolist() == [1, 0]
    assert binary("shift-right-arithmetic", "u8", [0x80], [1]).tolist() == [0xC0]


def test_float_max_min_propagate_nan_and_power():
    nan = float("nan")
    got = binary("maximum", "f32", [nan, 1.0, -0.0], [1.0, nan, 2.0])
    assert np.isnan(got[0]) and np.isnan(got[1]) and got[2] == 2.0
    assert binary("power", "s32", [2, 3, 2, 1, -1, -1], [10, 0, -1, -5, -3, -4]).tolist() == [1024, 1, 0, 1, -1, 1]


def test_compare_directions_and_total_order():
    nan = float("nan")
    assert binary("compare", "f32", [1, 2, nan], [2, 2, nan], ", direction=LT").tolist() == [True, False, False]
    assert binary("compare", "f32", [nan, 1.0], [nan, 1.0], ", direction=NE").tolist() == [True, False]
    # TOTALORDER: -NaN < -inf < -0 < +0 < inf < NaN
    a = np.array([-0.0, -np.inf, 1.0, np.inf, -0.0], np.float32)
    b = np.array([0.0, -0.0, np.nan, np.nan, -0.0], np.float32)
    got = run("  a = f32[5] parameter(0)\n  b = f32[5] parameter(1)\n"
              "  ROOT r = pred[5] compare(a, b), direction=LT, type=TOTALORDER", a, b)
    assert got.tolist() == [True, True, True, True, False]
    neg_nan = np.array([0xFFC00000], np.uint32).view(np.float32)
    got = run("  a = f32[1] parameter(0)\n  b = f32[1] parameter(1)\n"
              "  ROOT r = pred[1] compare(a, b), direction=LT, type=TOTALORDER",
              neg_nan, np.array([-np.inf], np.float32))
    assert got.tolist() == [True]
    got = binary("compare", "s32", [-1, 1], [1, 1], ", direction=LT, type=UNSIGNED")
    assert got.tolist() == [False, False]


def test_convert_saturates_and_maps_nan_to_zero():
    x = np.array([1e10, -1e10, np.nan, 2.7, -2.7, np.inf, 0.5], np.float32)
    got = run("  a = f32[7] parameter(0)\n  ROOT r = s32[7] convert(a)", x)
    assert got.tolist() == [2**31 - 1, INT_MIN, 0, 2, -2, 2**31 - 1, 0]
    got = run("  a = f32[3] parameter(0)\n  ROOT r = u8[3] convert(a)", np.array([300.0, -5.0, 7.9], np.float32))
    assert got.tolist() == [255, 0, 7]
    got = run("  a = f32[3] parameter(0)\n  ROOT r = pred[3] convert(a)", np.array([0.0, -0.0, 0.1], np.float32))
    assert got.tolist() == [False, False, True]
    # f32 -> bf16 rounds to nearest even: 1 + 2^-8 is halfway between 1 and 1 + 2^-7
    got = run("  a = f32[2] parameter(0)\n  ROOT r = bf16[2] convert(a)",
              np.array([1 + 2**-8, 1 + 3 * 2**-8], np.float32))
    assert got.astype(np.float32).tolist() == [1.0, 1 + 2**-6]
    got = run("  a = s32[2] parameter(0)\n  ROOT r = s8[2] convert(a)", np.array([300, -129], np.int32))
    assert got.tolist() == [44, 127]


def test_bitcast_convert_same_width():
    got = run("  a = f32[2] parameter(0)\n  ROOT r = u32[2] bitcast-convert(a)", np.array([1.0, -2.0], np.float32))
    assert got.tolist() == [0x3F800000, 0xC0000000]


def clz(x: np.ndarray) -> np.ndarray:
    # Built by editing a parsed module: the text parser does not know this opcode yet.
    ty = {np.dtype(np.int32): "s32", np.dtype(np.uint8): "u8"}[x.dtype]
    text = f"HloModule t\n\nENTRY e {{\n  a = {ty}[{x.size}] parameter(0)\n  ROOT r = {ty}[{x.size}] popcnt(a)\n}}\n"
    module = parse_module(text, "t.hlo")
    entry = module.entry
    root = dataclasses.replace(entry.root_instruction, opcode="count-leading-zeros")
    entry = dataclasses.replace(entry, instructions=(entry.instructions[0], root))
    return evaluate(dataclasses.replace(module, computations=(entry,)), [x])


def test_rounding_and_unary_math():
    x = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 0.49999997], np.float32)
    even = run("  a = f32[6] parameter(0)\n  ROOT r = f32[6] round-nearest-even(a)", x)
    afz = run("  a = f32[6] parameter(0)\n  ROOT r = f32[6] round-nearest-afz(a)", x)
    assert even.tolist() == [0, 2, 2, -0.0, -2, 0]
    assert afz.tolist() == [1, 2, 3, -1, -3, 0]
    s = run("  a = f32[4] parameter(0)\n  ROOT r = f32[4] sign(a)", np.array([-3, -0.0, 0, np.nan], np.float32))
    assert s[:3].tolist() == [-1, 0, 0] and np.signbit(s[1]) and np.isnan(s[3])
    assert clz(np.array([0, 1, -1, 255], np.int32)).tolist() == [32, 31, 0, 24]
    assert clz(np.array([0, 1, 0x80], np.uint8)).tolist() == [8, 7, 0]
    pc = run("  a = u8[3] parameter(0)\n  ROOT r = u8[3] popcnt(a)", np.array([0, 255, 0b1011], np.uint8))
    assert pc.tolist() == [0, 8, 3]
    fin = run("  a = f32[3] parameter(0)\n  ROOT r = pred[3] is-finite(a)", np.array([1, np.inf, np.nan], np.float32))
    assert fin.tolist() == [True, False, False]
    lg = run("  a = f32[1] parameter(0)\n  ROOT r = f32[1] logistic(a)", np.array([0.0], np.float32))
    assert lg.tolist() == [0.5]
    at = run("  a = f32[2] parameter(0)\n  b = f32[2] parameter(1)\n  ROOT r = f32[2] atan2(a, b)",
             np.array([1.0, 0.0], np.float32), np.array([0.0, -1.0], np.float32))
    assert np.allclose(at, [np.pi / 2, np.pi])


def test_bf16_arithmetic_rounds_each_instruction():
    one = np.array([1.0], ml_dtypes.bfloat16)
    tiny = np.array([2.0**-9], ml_dtypes.bfloat16)
    # (1 + 2^-9) + 2^-9 in bf16: each add rounds back to 1.
    got = run("  a = bf16[1] parameter(0)\n  b = bf16[1] parameter(1)\n"
              "  s = bf16[1] add(a, b)\n  ROOT r = bf16[1] add(s, b)", one, tiny)
    assert got.astype(np.float32).tolist() == [1.0]


def test_reduce_precision_to_bf16_like():
    x = np.array([1 + 2**-8, 1e39 if False else 3e38, 1e-39], np.float32)
    got = run("  a = f32[3] parameter(0)\n  ROOT r = f32[3] reduce-precision(a), exponent_bits=5, mantissa_bits=7", x)
    assert got[0] == 1.0 and np.isinf(got[1]) and got[2] == 0.0


def test_select_clamp_complex():
    got = run("  p = pred[3] parameter(0)\n  a = s32[3] parameter(1)\n  b = s32[3] parameter(2)\n"
              "  ROOT r = s32[3] select(p, a, b)",
              np.array([True, False, True]), np.array([1, 2, 3], np.int32), np.array([4, 5, 6], np.int32))
    assert got.tolist() == [1, 5, 3]
    got = run("  lo = s32[] constant(0)\n  hi = s32[] constant(5)\n  x = s32[3] parameter(0)\n"
              "  ROOT r = s32[3] clamp(lo, x, hi)", np.array([-3, 3, 9], np.int32))
    assert got.tolist() == [0, 3, 5]
    got = run("  a = f32[1] parameter(0)\n  b = f32[1] parameter(1)\n  c = c64[1] complex(a, b)\n"
              "  re = f32[1] real(c)\n  im = f32[1] imag(c)\n  ROOT t = (f32[1], f32[1]) tuple(im, re)",
              np.array([3.0], np.float32), np.array([4.0], np.float32))
    assert got[0].tolist() == [4.0] and got[1].tolist() == [3.0]


# ---------------------------------------------------------------------------
# Data movement
# ---------------------------------------------------------------------------


def test_broadcast_reshape_transpose_iota():
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    got = run("  a = s32[2,3] parameter(0)\n  ROOT r = s32[3,4,2] broadcast(a), dimensions={2,0}", x)
    assert got.shape == (3, 4, 2)
    assert all(got[j, k, i] == x[i, j] for i in range(2) for j in range(3) for k in range(4))
    got = run("  a = s32[2,3] parameter(0)\n  ROOT r = s32[3,2] transpose(a), dimensions={1,0}", x)
    assert got.tolist() == [[0, 3], [1, 4], [2, 5]]
    got = run("  a = s32[2,3] parameter(0)\n  ROOT r = s32[3,2] reshape(a)", x)
    assert got.tolist() == [[0, 1], [2, 3], [4, 5]]
    got = run("  ROOT r = f32[2,3] iota(), iota_dimension=1")
    assert got.tolist() == [[0, 1, 2], [0, 1, 2]]


def test_slice_pad_concat_reverse():
    x = np.arange(10, dtype=np.int32)
    got = run("  a = s32[10] parameter(0)\n  ROOT r = s32[3] slice(a), slice={[1:8:3]}", x)
    assert got.tolist() == [1, 4, 7]
    y = np.array([1, 2, 3], np.int32)
    got = run("  a = s32[3] parameter(0)\n  z = s32[] constant(0)\n  ROOT r = s32[8] pad(a, z), padding=1_2_1", y)
    assert got.tolist() == [0, 1, 0, 2, 0, 3, 0, 0]
    got = run("  a = s32[3] parameter(0)\n  z = s32[] constant(9)\n  ROOT r = s32[4] pad(a, z), padding=-2_1_1", y)
    assert got.tolist() == [2, 9, 3, 9]  # [1,9,2,9,3] with its first 2 dropped, then 1 high
    got = run("  a = s32[3] parameter(0)\n  ROOT r = s32[6] concatenate(a, a), dimensions={0}", y)
    assert got.tolist() == [1, 2, 3, 1, 2, 3]
    got = run("  a = s32[2,3] parameter(0)\n  ROOT r = s32[2,3] reverse(a), dimensions={1}", x[:6].reshape(2, 3))
    assert got.tolist() == [[2, 1, 0], [5, 4, 3]]


def test_dynamic_slice_and_update_clamp():
    x = np.arange(10, dtype=np.int32)
    body = "  a = s32[10] parameter(0)\n  i = s32[] parameter(1)\n  ROOT r = s32[3] dynamic-slice(a, i), dynamic_slice_sizes={3}"
    assert run(body, x, np.array(8, np.int32)).tolist() == [7, 8, 9]
    assert run(body, x, np.array(-4, np.int32)).tolist() == [0, 1, 2]
    body = ("  a = s32[10] parameter(0)\n  u = s32[2] parameter(1)\n  i = u32[] parameter(2)\n"
            "  ROOT r = s32[10] dynamic-update-slice(a, u, i)")
    got = run(body, x, np.array([-1, -2], np.int32), np.array(4000000000, np.uint32))
    assert got.tolist() == [0, 1, 2, 3, 4, 5, 6, 7, -1, -2]


def test_unknown_opcode_and_custom_call_are_clear_errors():
    text = ('HloModule t\n\nENTRY e {\n  a = f32[2] parameter(0)\n'
            '  ROOT r = f32[2] custom-call(a), custom_call_target="my_kernel"\n}\n')
    with pytest.raises(InterpretError, match="unsupported custom-call 'my_kernel'"):
        evaluate(parse_module(text, "t.hlo"), [np.zeros(2, np.float32)])


def test_wrong_argument_shape_is_an_error():
    with pytest.raises(InterpretError, match="parameter 'a'"):
        run("  ROOT a = f32[2] parameter(0)", np.zeros(3, np.float32))
