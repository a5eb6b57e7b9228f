"""dot, convolution, reductions, windows, sort, gather/scatter, control flow, LAPACK.

Expectations come from brute-force loops written here or from numpy/scipy,
never from the interpreter itself.
"""

from __future__ import annotations

import itertools

import numpy as np

from hlo.interpreter import evaluate
from hlo.parser import parse_module

ADD = "add {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] add(x, y)\n}\n"
ADD_S32 = "add_s32 {\n  x = s32[] parameter(0)\n  y = s32[] parameter(1)\n  ROOT s = s32[] add(x, y)\n}\n"
MAX = "max {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] maximum(x, y)\n}\n"


def run(body: str, *args, comps: str = ""):
    text = f"HloModule t\n\n{comps}\nENTRY e {{\n{body}\n}}\n"
    return evaluate(parse_module(text, "t.hlo"), list(args))


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_dot_general_with_batch_and_contracting_dims():
    a, b = rand(2, 3, 4), rand(4, 2, 5, seed=1)
    got = run("  a = f32[2,3,4] parameter(0)\n  b = f32[4,2,5] parameter(1)\n"
              "  ROOT d = f32[2,3,5] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={2}, "
              "rhs_batch_dims={1}, rhs_contracting_dims={0}", a, b)
    want = np.zeros((2, 3, 5))
    for n, i, j, k in itertools.product(range(2), range(3), range(5), range(4)):
        want[n, i, j] += float(a[n, i, k]) * float(b[k, n, j])
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_integer_dot_wraps_in_result_type():
    a = np.full((1, 4), 100, np.int8)
    got = run("  a = s8[1,4] parameter(0)\n  b = s8[4,1] parameter(1)\n"
              "  ROOT d = s32[1,1] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
              a, a.reshape(4, 1))
    assert got.tolist() == [[40000]]


def brute_conv(x, w, stride, pad, lhs_dil, rhs_dil, groups):
    """NCHW x OIHW reference with explicit loops."""
    n, c, h, wd = x.shape
    o, i, kh, kw = w.shape
    # dilate + pad the input
    hd, wdd = (h - 1) * lhs_dil[0] + 1, (wd - 1) * lhs_dil[1] + 1
    xd = np.zeros((n, c, hd + pad[0][0] + pad[0][1], wdd + pad[1][0] + pad[1][1]))
    xd[:, :, pad[0][0]:pad[0][0] + hd:lhs_dil[0], pad[1][0]:pad[1][0] + wdd:lhs_dil[1]] = x
    ekh, ekw = (kh - 1) * rhs_dil[0] + 1, (kw - 1) * rhs_dil[1] + 1
    oh = (xd.shape[2] - ekh) // stride[0] + 1
    ow = (xd.shape[3] - ekw) // stride[1] + 1
    out = np.zeros((n, o, oh, ow))
    og = o // groups
    for b, f, p, q in itertools.product(range(n), range(o), range(oh), range(ow)):
        g = f // og
        for ci, r, s in itertools.product(range(i), range(kh), range(kw)):
            out[b, f, p, q] += xd[b, g * i + ci, p * stride[0] + r * rhs_dil[0], q * stride[1] + s * rhs_dil[1]] * w[f, ci, r, s]
    return out


def test_convolution_nhwc_with_stride_padding_dilation_groups():
    x = rand(2, 4, 7, 6)  # NCHW reference data
    w = rand(6, 2, 3, 2, seed=1)  # OIHW, 2 feature groups of 2 input channels
    want = brute_conv(x, w, (2, 1), ((1, 2), (0, 1)), (1, 2), (2, 1), 2)
    got = run(
        "  x = f32[2,7,6,4] parameter(0)\n  w = f32[3,2,2,6] parameter(1)\n"
        "  ROOT c = f32[2,3,11,6] convolution(x, w), window={size=3x2 stride=2x1 pad=1_2x0_1 lhs_dilate=1x2 rhs_dilate=2x1}, "
        "dim_labels=b01f_01io->b01f, feature_group_count=2",
        np.transpose(x, (0, 2, 3, 1)).copy(), np.transpose(w, (2, 3, 1, 0)).copy(),
    )
    np.testing.assert_allclose(np.transpose(got, (0, 3, 1, 2)), want, rtol=1e-5, atol=1e-5)


def test_convolution_batch_groups_brute_force():
    x = rand(4, 3, 6)  # b f 0: N=4, C=3, W=6
    w = rand(3, 4, 2, seed=3)  # i o 0: I=3, O=4, K=2
    got = run(
        "  x = f32[4,3,6] parameter(0)\n  w = f32[3,4,2] parameter(1)\n"
        "  ROOT c = f32[2,4,5] convolution(x, w), window={size=2}, dim_labels=bf0_io0->bf0, batch_group_count=2",
        x, w,
    )
    want = np.zeros((2, 4, 5))
    for nb, o, p in itertools.product(range(2), range(4), range(5)):
        g = o // 2  # output features split into 2 contiguous groups
        for c, k in itertools.product(range(3), range(2)):
            want[nb, o, p] += x[g * 2 + nb, c, p + k] * w[c, o, k]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_reduce_plain_and_variadic_argmax():
    x = rand(3, 5)
    got = run("  a = f32[3,5] parameter(0)\n  z = f32[] constant(0)\n"
              "  ROOT r = f32[5] reduce(a, z), dimensions={0}, to_apply=add", x, comps=ADD)
    np.testing.assert_allclose(got, x.astype(np.float64).sum(0), rtol=1e-6)
    argmax = (
        "argmax {\n  av = f32[] parameter(0)\n  ai = s32[] parameter(1)\n  bv = f32[] parameter(2)\n"
        "  bi = s32[] parameter(3)\n  gt = pred[] compare(av, bv), direction=GT\n"
        "  eq = pred[] compare(av, bv), direction=EQ\n  lt = pred[] compare(ai, bi), direction=LT\n"
        "  tie = pred[] and(eq, lt)\n  pick = pred[] or(gt, tie)\n"
        "  v = f32[] select(pick, av, bv)\n  i = s32[] select(pick, ai, bi)\n"
        "  ROOT t = (f32[], s32[]) tuple(v, i)\n}\n"
    )
    x = np.array([[1, 5, 5, 2], [7, 0, 7, 7]], np.float32)
    got = run("  a = f32[2,4] parameter(0)\n  i = s32[2,4] iota(), iota_dimension=1\n"
              "  ninf = f32[] constant(-inf)\n  zero = s32[] constant(0)\n"
              "  ROOT r = (f32[2], s32[2]) reduce(a, i, ninf, zero), dimensions={1}, to_apply=argmax",
              x, comps=argmax)
    assert got[0].tolist() == [5, 7] and got[1].tolist() == [1, 0]


def test_reduce_window_with_padding_and_base_dilation():
    x = np.arange(1, 6, dtype=np.float32)
    got = run("  a = f32[5] parameter(0)\n  z = f32[] constant(0)\n"
              "  ROOT r = f32[5] reduce-window(a, z), window={size=3 pad=1_1}, to_apply=add", x, comps=ADD)
    assert got.tolist() == [3, 6, 9, 12, 9]
    got = run("  a = f32[5] parameter(0)\n  z = f32[] constant(-inf)\n"
              "  ROOT r = f32[2] reduce-window(a, z), window={size=2 stride=3}, to_apply=max", x, comps=MAX)
    assert got.tolist() == [2, 5]
    # base dilation 2: [1,i,2,i,3] (i = init 0), windows of 2 with stride 1
    got = run("  a = f32[3] parameter(0)\n  z = f32[] constant(0)\n"
              "  ROOT r = f32[4] reduce-window(a, z), window={size=2 lhs_dilate=2}, to_apply=add",
              np.array([1, 2, 3], np.float32), comps=ADD)
    assert got.tolist() == [1, 2, 2, 3]


def test_select_and_scatter_max_pool_gradient():
    ge = "ge {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT c = pred[] compare(x, y), direction=GE\n}\n"
    x = np.array([1, 9, 3, 4, 4, 2], np.float32)
    src = np.array([10, 20, 30], np.float32)
    got = run("  a = f32[6] parameter(0)\n  s = f32[3] parameter(1)\n  z = f32[] constant(0)\n"
              "  ROOT r = f32[6] select-and-scatter(a, s, z), window={size=3 stride=2 pad=0_1}, select=ge, scatter=add",
              x, src, comps=ge + ADD)
    # windows [1,9,3] -> 9 (idx1), [3,4,4] -> first 4 (idx3), [4,2,pad] -> 4 (idx4)
    assert got.tolist() == [0, 10, 0, 20, 30, 0]


def test_sort_multi_operand_stable_with_comparator():
    cmp = ("lt {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  c = s32[] parameter(2)\n"
           "  d = s32[] parameter(3)\n  ROOT r = pred[] compare(a, b), direction=LT\n}\n")
    rng = np.random.default_rng(0)
    keys = rng.integers(0, 5, size=(3, 37)).astype(np.float32)
    got = run("  k = f32[3,37] parameter(0)\n  i = s32[3,37] iota(), iota_dimension=1\n"
              "  ROOT s = (f32[3,37], s32[3,37]) sort(k, i), dimensions={1}, is_stable=true, to_apply=lt",
              keys, comps=cmp)
    order = np.argsort(keys, axis=1, kind="stable")
    assert got[1].tolist() == order.tolist()
    assert got[0].tolist() == np.take_along_axis(keys, order, 1).tolist()


def test_sort_descending_along_dim0():
    cmp = "gt {\n  a = s32[] parameter(0)\n  b = s32[] parameter(1)\n  ROOT r = pred[] compare(a, b), direction=GT\n}\n"
    x = np.array([[3, 1], [5, 9], [4, 2]], np.int32)
    got = run("  k = s32[3,2] parameter(0)\n  ROOT s = s32[3,2] sort(k), dimensions={0}, to_apply=gt", x, comps=cmp)
    assert got.tolist() == [[5, 9], [4, 2], [3, 1]]


def test_gather_embedding_and_clamping():
    table = np.arange(12, dtype=np.float32).reshape(4, 3)
    idx = np.array([[2], [0], [7]], np.int32)  # 7 is clamped to the last row
    got = run("  t = f32[4,3] parameter(0)\n  i = s32[3,1] parameter(1)\n"
              "  ROOT g = f32[3,3] gather(t, i), offset_dims={1}, collapsed_slice_dims={0}, "
              "start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}", table, idx)
    assert got.tolist() == [table[2].tolist(), table[0].tolist(), table[3].tolist()]


def test_gather_windows_with_batching_dims():
    x = np.arange(2 * 5 * 3, dtype=np.int32).reshape(2, 5, 3)
    idx = np.array([[1, 4], [0, 3]], np.int32)  # (batch=2, n=2) starts into dim 1
    # batching dims must be collapsed from the slice; operand dim 0 is a batching dim of size 1
    got = run("  x = s32[2,5,3] parameter(0)\n  i = s32[2,2] parameter(1)\n"
              "  ROOT g = s32[2,2,2,3] gather(x, i), offset_dims={2,3}, collapsed_slice_dims={}, "
              "start_index_map={1}, operand_batching_dims={0}, start_indices_batching_dims={0}, "
              "index_vector_dim=2, slice_sizes={1,2,3}", x, idx)
    want = np.zeros((2, 2, 2, 3), np.int32)
    for b, n in itertools.product(range(2), range(2)):
        s = min(max(idx[b, n], 0), 5 - 2)
        want[b, n] = x[b, s:s + 2, :]
    assert got.tolist() == want.tolist()


def test_scatter_add_with_duplicates_and_out_of_bounds():
    x = np.zeros(5, np.int32)
    idx = np.array([[1], [3], [1], [9]], np.int32)  # 9: the window does not fit -> skipped
    upd = np.array([10, 20, 30, 40], np.int32)
    got = run("  x = s32[5] parameter(0)\n  i = s32[4,1] parameter(1)\n  u = s32[4] parameter(2)\n"
              "  ROOT s = s32[5] scatter(x, i, u), update_window_dims={}, inserted_window_dims={0}, "
              "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add_s32",
              x, idx, upd, comps=ADD_S32)
    assert got.tolist() == [0, 40, 0, 20, 0]


def test_scatter_overwrite_rows_last_update_wins():
    keep = "second {\n  x = f32[] parameter(0)\n  ROOT y = f32[] parameter(1)\n}\n"
    x = np.zeros((3, 2), np.float32)
    idx = np.array([2, 0, 2], np.int32)
    upd = np.array([[1, 1], [2, 2], [3, 3]], np.float32)
    got = run("  x = f32[3,2] parameter(0)\n  i = s32[3] parameter(1)\n  u = f32[3,2] parameter(2)\n"
              "  ROOT s = f32[3,2] scatter(x, i, u), update_window_dims={1}, inserted_window_dims={0}, "
              "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=second",
              x, idx, upd, comps=keep)
    assert got.tolist() == [[2, 2], [0, 0], [3, 3]]


def test_while_conditional_call_map():
    comps = (
        "cond {\n  p = (s32[], s32[]) parameter(0)\n  i = s32[] get-tuple-element(p), index=0\n"
        "  n = s32[] constant(5)\n  ROOT c = pred[] compare(i, n), direction=LT\n}\n"
        "body {\n  p = (s32[], s32[]) parameter(0)\n  i = s32[] get-tuple-element(p), index=0\n"
        "  s = s32[] get-tuple-element(p), index=1\n  one = s32[] constant(1)\n"
        "  i2 = s32[] add(i, one)\n  s2 = s32[] add(s, i)\n  ROOT t = (s32[], s32[]) tuple(i2, s2)\n}\n"
        "neg {\n  x = s32[] parameter(0)\n  ROOT y = s32[] negate(x)\n}\n"
        "dbl {\n  x = s32[] parameter(0)\n  ROOT y = s32[] add(x, x)\n}\n"
        "sq {\n  x = s32[] parameter(0)\n  ROOT y = s32[] multiply(x, x)\n}\n"
    )
    body = ("  z = s32[] constant(0)\n  init = (s32[], s32[]) tuple(z, z)\n"
            "  w = (s32[], s32[]) while(init), condition=cond, body=body\n"
            "  total = s32[] get-tuple-element(w), index=1\n"
            "  b = s32[] parameter(0)\n"
            "  c = s32[] conditional(b, total, total, total), branch_computations={neg, dbl, sq}\n"
            "  v = s32[3] parameter(1)\n  m = s32[3] map(v), dimensions={0}, to_apply=sq\n"
            "  k = s32[] call(c), to_apply=neg\n"
            "  ROOT r = (s32[], s32[3]) tuple(k, m)")
    v = np.array([1, 2, 3], np.int32)
    assert run(body, np.array(0, np.int32), v, comps=comps)[0] == 10  # -(-10)
    assert run(body, np.array(1, np.int32), v, comps=comps)[0] == -20
    assert run(body, np.array(7, np.int32), v, comps=comps)[0] == -100  # out of range -> last branch
    assert run(body, np.array(2, np.int32), v, comps=comps)[1].tolist() == [1, 4, 9]


def test_fft_and_rfft_match_numpy():
    x = (rand(2, 8) + 1j * rand(2, 8, seed=1)).astype(np.complex64)
    got = run("  a = c64[2,8] parameter(0)\n  ROOT f = c64[2,8] fft(a), fft_type=FFT, fft_length={8}", x)
    np.testing.assert_allclose(got, np.fft.fft(x), rtol=1e-5, atol=1e-5)
    r = rand(3, 8)
    got = run("  a = f32[3,8] parameter(0)\n  ROOT f = c64[3,5] fft(a), fft_type=RFFT, fft_length={8}", r)
    np.testing.assert_allclose(got, np.fft.rfft(r), rtol=1e-5, atol=1e-5)


def test_lapack_cholesky_and_triangular_solve():
    a = rand(2, 4, 4)
    spd = (a @ np.swapaxes(a, 1, 2) + 4 * np.eye(4)).astype(np.float32)
    got = run('  a = f32[2,4,4]{1,2,0} parameter(0)\n'
              '  ROOT c = (f32[2,4,4]{1,2,0}, s32[2]{0}) custom-call(a), custom_call_target="lapack_spotrf_ffi", '
              'operand_layout_constraints={f32[2,4,4]{1,2,0}}, frontend_attributes={num_batch_dims="1"}, '
              'backend_config={uplo = 76 : ui8}', spd)
    lower = np.tril(got[0])
    np.testing.assert_allclose(lower, np.linalg.cholesky(spd.astype(np.float64)), rtol=1e-4, atol=1e-5)
    assert got[1].tolist() == [0, 0]
    b = rand(2, 4, 3, seed=5)
    x = run('  a = f32[2,4,4] parameter(0)\n  b = f32[2,4,3] parameter(1)\n'
            '  ROOT x = f32[2,4,3] custom-call(a, b), custom_call_target="lapack_strsm_ffi", '
            'frontend_attributes={num_batch_dims="1"}, '
            'backend_config={diag = 78 : ui8, side = 76 : ui8, trans_x = 78 : ui8, uplo = 76 : ui8}',
            lower.astype(np.float32), b)
    np.testing.assert_allclose(lower @ x, b, rtol=1e-4, atol=1e-4)


def test_cholesky_and_triangular_solve_opcodes():
    a = rand(3, 3)
    spd = (a @ a.T + 3 * np.eye(3)).astype(np.float32)
    low = run("  a = f32[3,3] parameter(0)\n  ROOT c = f32[3,3] cholesky(a), lower=true", spd)
    np.testing.assert_allclose(low @ low.T, spd, rtol=1e-5, atol=1e-5)
    b = rand(3, 2, seed=4)
    x = run("  a = f32[3,3] parameter(0)\n  b = f32[3,2] parameter(1)\n"
            "  ROOT x = f32[3,2] triangular-solve(a, b), left_side=true, lower=true, "
            "unit_diagonal=false, transpose_a=TRANSPOSE", low, b)
    np.testing.assert_allclose(np.tril(low).T @ x, b, rtol=1e-4, atol=1e-4)
    y = run("  a = f32[3,3] parameter(0)\n  b = f32[2,3] parameter(1)\n"
            "  ROOT x = f32[2,3] triangular-solve(a, b), left_side=false, lower=true, "
            "unit_diagonal=true, transpose_a=NO_TRANSPOSE", low, b.T.copy())
    unit = np.tril(low, -1) + np.eye(3)
    np.testing.assert_allclose(y @ unit, b.T, rtol=1e-4, atol=1e-4)
