"""Dot, convolution, and the window arithmetic shared with reduce-window.

``dot(f32[8,2,3], f32[8,3,5]), lhs_batch_dims={0}, lhs_contracting_dims={2},
rhs_batch_dims={0}, rhs_contracting_dims={1} -> f32[8,2,5]`` (batch, lhs free, rhs free).
The result element type is the instruction's own (XLA's *preferred element type*).
"""

from __future__ import annotations

from hlo.ir import ConvDimLabels, Window, WindowDim
from hlo.shape import Shape
from hlo.shape_inference.operands import Context, array, check_dims_in_range, fail


def window_output_size(size: int, w: WindowDim) -> int:
    """Output length of one window dim: dilate the base, pad, dilate the window, stride.

    ``size=10, window 3, stride 2, pad 1_1`` -> padded 12, (12 - 3) // 2 + 1 = 5.
    """
    if w.size < 1 or w.stride < 1 or w.base_dilation < 1 or w.window_dilation < 1:
        fail(f"window dim {w} must have positive size, stride and dilations")
    dilated_base = (size - 1) * w.base_dilation + 1 if size > 0 else 0
    padded = dilated_base + w.padding_low + w.padding_high
    dilated_window = (w.size - 1) * w.window_dilation + 1
    if padded < dilated_window:
        return 0
    return (padded - dilated_window) // w.stride + 1


def window_of(ctx: Context, rank: int) -> Window:
    window = ctx.instr.attr("window")
    if window is None and rank == 0:
        return Window(())
    if not isinstance(window, Window):
        fail(f"{ctx.instr.opcode} needs a 'window' attribute")
    if len(window.dims) != rank:
        fail(f"window has {len(window.dims)} dims, {rank} expected")
    return window


def dot(ctx: Context) -> Shape:
    if ctx.instr.attr("sparsity") is not None:
        # Sparse dots carry metadata operands whose shapes follow the sparsity
        # descriptor; only the result type is checked here.
        return None  # type: ignore[return-value]
    lhs, rhs = ctx.array(0), ctx.array(1)
    lb, rb = ctx.ints("lhs_batch_dims"), ctx.ints("rhs_batch_dims")
    lc, rc = ctx.ints("lhs_contracting_dims"), ctx.ints("rhs_contracting_dims")
    check_dims_in_range(lb + lc, lhs.rank, "lhs batch/contracting dim")
    check_dims_in_range(rb + rc, rhs.rank, "rhs batch/contracting dim")
    if len(lb) != len(rb) or len(lc) != len(rc):
        fail(f"dot needs as many lhs as rhs batch dims ({list(lb)} vs {list(rb)}) and "
             f"contracting dims ({list(lc)} vs {list(rc)})")
    for a, b in zip(lb, rb):
        if lhs.dims[a] != rhs.dims[b]:
            fail(f"dot batch dims differ in size: lhs dim {a} is {lhs.dims[a]}, "
                 f"rhs dim {b} is {rhs.dims[b]}")
    for a, b in zip(lc, rc):
        if lhs.dims[a] != rhs.dims[b]:
            fail(f"dot contracting dims differ in size: lhs dim {a} is {lhs.dims[a]}, "
                 f"rhs dim {b} is {rhs.dims[b]}")
    out = [lhs.dims[d] for d in lb]
    out += [s for d, s in enumerate(lhs.dims) if d not in lb and d not in lc]
    out += [s for d, s in enumerate(rhs.dims) if d not in rb and d not in rc]
    return array(ctx.result_array().element_type, out)


def convolution(ctx: Context) -> Shape:
    lhs, rhs = ctx.array(0), ctx.array(1)
    labels = ctx.instr.attr("dim_labels")
    if not isinstance(labels, ConvDimLabels):
        fail("convolution needs 'dim_labels'")
    spatial = len(labels.input_spatial)
    if lhs.rank != spatial + 2 or rhs.rank != spatial + 2:
        fail(f"convolution with {spatial} spatial dims needs rank-{spatial + 2} operands, "
             f"got {lhs} and {rhs}")
    if len(labels.kernel_spatial) != spatial or len(labels.output_spatial) != spatial:
        fail(f"dim_labels '{labels.text}' disagree on the number of spatial dims")
    fgc = ctx.int("feature_group_count", 1)
    bgc = ctx.int("batch_group_count", 1)
    in_batch = lhs.dims[labels.input_batch]
    in_feature = lhs.dims[labels.input_feature]
    k_in = rhs.dims[labels.kernel_input_feature]
    k_out = rhs.dims[labels.kernel_output_feature]
    if fgc < 1 or bgc < 1:
        fail("feature_group_count and batch_group_count must be positive")
    if in_feature % fgc or in_feature // fgc != k_in:
        fail(f"convolution input features {in_feature} / feature_group_count {fgc} must "
             f"equal the kernel input features {k_in}")
    if k_out % fgc or k_out % bgc or in_batch % bgc:
        fail(f"kernel output features {k_out} and input batch {in_batch} must divide by the "
             f"group counts ({fgc}, {bgc})")
    window = window_of(ctx, spatial)
    out = [0] * (spatial + 2)
    out[labels.output_batch] = in_batch // bgc
    out[labels.output_feature] = k_out
    for i, w in enumerate(window.dims):
        if w.size != rhs.dims[labels.kernel_spatial[i]]:
            fail(f"window size {w.size} of spatial dim {i} must equal the kernel's "
                 f"{rhs.dims[labels.kernel_spatial[i]]}")
        out[labels.output_spatial[i]] = window_output_size(lhs.dims[labels.input_spatial[i]], w)
    return array(ctx.result_array().element_type, out)


RULES = {"dot": dot, "convolution": convolution}
