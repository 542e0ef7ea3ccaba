"""Convolution in NCHW[x]c (the nchw8c / nchw16c graphs, core/graphs.py) as a TE compute.

TVM's legalization of relax.nn.conv2d refuses channel-blocked layouts, and topi's
conv2d_NCHWc reduces over one fused input-channel axis (ic // b, ic % b) and wants a target
context. Here the input channel is two reduction axes, block and lane, so that MetaSchedule's
multi-level tiling sees plain loops: the output's innermost axis is the vector lane
(oc % b), and the weight (O/b, I/b, KH, KW, b_in, b_out) is read along it contiguously.
"""

from __future__ import annotations

from typing import Any

from tasks.relax_rewrite import bound_call, call_rewriting_pass


def legalize_conv2d(bb: Any, call: Any) -> Any:
    """LegalizeOps's rule for relax.nn.conv2d: TVM's own, except for channel-blocked data
    ("NCHW8c" from ConvertLayout), which gets conv2d_nchwc."""
    from tvm.relax.transform.legalize_ops.nn import _nn_conv2d

    attrs = call.attrs
    blocked = len(attrs.data_layout) > 4 and attrs.out_layout == attrs.data_layout
    geometry = {"strides": [int(s) for s in attrs.strides],
                "padding": [int(p) for p in attrs.padding],
                "dilation": [int(d) for d in attrs.dilation],
                "out_dtype": attrs.out_dtype if attrs.out_dtype != "" else call.args[0].ty.dtype}
    if blocked and _is_blocked_depthwise(call):
        compact = bb.emit_te(block_diagonal, call.args[1], primfunc_name_hint="block_diagonal")
        return bb.call_te(depthwise_conv2d_nchwc, call.args[0], compact, **geometry,
                          primfunc_name_hint="depthwise_conv2d_NCHWc")
    if not blocked or int(attrs.groups) != 1:
        return _nn_conv2d(bb, call)  # TVM's rule (and its refusal of what it cannot do)
    return bb.call_te(conv2d_nchwc, call.args[0], call.args[1], **geometry,
                      primfunc_name_hint="conv2d_NCHWc")


def conv2d_nchwc(data: Any, weight: Any, strides: list[int], padding: list[int],
                 dilation: list[int], out_dtype: str) -> Any:
    """data (N, C/b, H, W, b), weight (O/bo, C/b, KH, KW, b, bo) -> (N, O/bo, OH, OW, bo).
    padding is Relax's (top, left, bottom, right)."""
    from tvm import te

    n, ic_chunks, _, _, ic_block = (int(d) for d in data.shape)
    oc_chunks, _, kernel_h, kernel_w, _, oc_block = (int(d) for d in weight.shape)
    data, out_h, out_w = _padded(data, kernel_h, kernel_w, strides, padding, dilation)
    icc = te.reduce_axis((0, ic_chunks), name="icc")
    icb = te.reduce_axis((0, ic_block), name="icb")
    kh = te.reduce_axis((0, kernel_h), name="kh")
    kw = te.reduce_axis((0, kernel_w), name="kw")
    return te.compute(
        (n, oc_chunks, out_h, out_w, oc_block),
        lambda b, occ, oh, ow, ocb: te.sum(
            data[b, icc, oh * strides[0] + kh * dilation[0], ow * strides[1] + kw * dilation[1],
                 icb].astype(out_dtype)
            * weight[occ, icc, kh, kw, icb, ocb].astype(out_dtype),
            axis=[icc, icb, kh, kw]),
        name="conv2d_NCHWc")


def clip_as_max_min() -> Any:
    """A Relax pass: clip(x, lo, hi) -> minimum(maximum(x, lo), hi), before ConvertLayout.

    Relax's ConvertLayout has no layout rule for relax.clip, so it converts a blocked tensor
    back to NCHW before every clip and blocks it again after: in MobileNet-V2's NCHW16c graph
    each ReLU6 became a layout transform, a clip of its own (no longer fused into the
    convolution before it) and another transform; the clips alone were 15.6% of the tuned
    network's estimate (docs/tuning-results.md). maximum and minimum are elementwise
    operators it does lay out, so ReLU6 stays blocked and fuses into its convolution."""
    from tvm import relax

    def split(builder: Any, call: Any) -> Any:
        data, low, high = call.args
        dtype = data.ty.dtype
        floor = builder.emit(relax.op.maximum(data, relax.const(_number(low), dtype)))
        return relax.op.minimum(floor, relax.const(_number(high), dtype))

    return call_rewriting_pass("relax.clip", split, "ClipAsMaxMin")


def _number(bound: Any) -> float:
    """A clip bound (a PrimValue of an IntImm or FloatImm, or a number) as a float."""
    value = getattr(bound, "value", bound)
    return float(getattr(value, "value", value))


# ------------------------------------------------------------------ depthwise, channel-blocked
# ConvertLayout blocks a convolution only where its weight's input channels divide by the block:
# a depthwise one (weight C x 1 x KH x KW) stays NCHW, so MobileNet-V2's NCHW16c graph paid a
# layout transform into and out of each of its 17 depthwise convolutions (27% of the tuned
# network's estimate, docs/tuning-results.md). depthwise_as_grouped rewrites each as the same
# convolution in groups of one block (weight C x b x KH x KW, block-diagonal: output channel o
# reads input o % b of its group, the rest is zeros), which ConvertLayout does block; the
# legalization then computes it as what it is, a depthwise convolution on the diagonal
# (block_diagonal, weights only: computed once at import), not b times the work.


def depthwise_as_grouped(block: int) -> Any:
    """A Relax pass, before ConvertLayout: depthwise conv2d (NCHW, C > block channels, C a
    multiple of `block`) -> the same convolution as groups of `block` channels."""
    import numpy as np
    from tvm import relax

    def grouped(builder: Any, call: Any) -> Any:
        attrs, weight = call.attrs, call.args[1]
        shape = [int(d) for d in weight.ty.shape]
        channels = shape[0]
        if (attrs.data_layout != "NCHW" or attrs.kernel_layout != "OIHW" or shape[1] != 1
                or int(attrs.groups) != channels or channels % block or channels <= block):
            return call
        mask = np.zeros((channels, block, 1, 1), dtype=str(weight.ty.dtype))
        mask[np.arange(channels), np.arange(channels) % block] = 1
        diagonal = builder.emit(relax.op.multiply(weight, relax.const(mask)))
        return relax.op.nn.conv2d(
            call.args[0], diagonal, strides=attrs.strides, padding=attrs.padding,
            dilation=attrs.dilation, groups=channels // block, data_layout="NCHW",
            kernel_layout="OIHW", out_layout=attrs.out_layout,
            out_dtype=attrs.out_dtype if attrs.out_dtype != "" else None)

    return call_rewriting_pass("relax.nn.conv2d", grouped, "DepthwiseAsGrouped")


# Relax's reductions, which ConvertLayout lays out (their layout rules keep a blocked layout)
_REDUCTIONS = ("relax.mean", "relax.sum", "relax.max", "relax.min", "relax.prod",
               "relax.variance", "relax.std")


def reduction_before_layer_norm_unblocked() -> Any:
    """A Relax pass, before ConvertLayout in the blocked graphs: a reduction whose result a
    layer_norm takes is legalized to its TIR function at once (a call_tir, whose arguments
    ConvertLayout gives in the layout the graph had), so it reduces the unblocked tensor.

    ConvertLayout carries a blocked layout through a reduction over the spatial axes (a
    global average pool written as x.mean((2, 3))), and layer_norm's layout rule then maps
    the normalized axis onto that layout's outer channel axis (TVM 0.27): ConvNeXt's head
    (mean, then norm) failed to import in nchw16c ("... (48,) and (768,) that are unequal":
    768 channels in blocks of 16), the default graph on AVX-512. The permute_dims before each
    of its blocks' channels-last norms is laid out right, and is left alone."""
    from tvm import relax

    def from_unblocked(builder: Any, call: Any) -> Any:
        bound = bound_call(builder, call.args[0], _REDUCTIONS)
        if bound is None:
            return call
        legalize = bound.op.get_attr("FLegalize")
        data = builder.emit(legalize(builder, bound))
        return relax.Call(call.op, [data, *call.args[1:]], call.attrs, call.ty_args)

    return call_rewriting_pass("relax.nn.layer_norm", from_unblocked,
                                "ReductionBeforeLayerNormUnblocked")


def _is_blocked_depthwise(call: Any) -> bool:
    """A blocked conv2d of groups of one block whose weight (O/b, 1, KH, KW, b, b) is what
    depthwise_as_grouped made: each group one block of channels in, one out."""
    data = [int(d) for d in call.args[0].ty.shape]
    weight = [int(d) for d in call.args[1].ty.shape]
    groups = int(call.attrs.groups)
    return (len(data) == 5 and len(weight) == 6 and groups > 1 and groups == data[1] == weight[0]
            and weight[1] == 1 and weight[4] == weight[5] == data[4])


def block_diagonal(weight: Any) -> Any:
    """(C/b, 1, KH, KW, b, b) block-diagonal weight -> its diagonal, (C/b, KH, KW, b)."""
    from tvm import te

    chunks, _, kernel_h, kernel_w, block, _ = (int(d) for d in weight.shape)
    return te.compute((chunks, kernel_h, kernel_w, block),
                      lambda c, kh, kw, b: weight[c, 0, kh, kw, b, b], name="block_diagonal")


def depthwise_conv2d_nchwc(data: Any, weight: Any, strides: list[int], padding: list[int],
                           dilation: list[int], out_dtype: str) -> Any:
    """data (N, C/b, H, W, b), weight (C/b, KH, KW, b) -> (N, C/b, OH, OW, b): each channel
    convolved with its own kernel, the vector lane innermost in data, weight and output."""
    from tvm import te

    n, chunks, _, _, block = (int(d) for d in data.shape)
    _, kernel_h, kernel_w, _ = (int(d) for d in weight.shape)
    data, out_h, out_w = _padded(data, kernel_h, kernel_w, strides, padding, dilation)
    kh = te.reduce_axis((0, kernel_h), name="kh")
    kw = te.reduce_axis((0, kernel_w), name="kw")
    return te.compute(
        (n, chunks, out_h, out_w, block),
        lambda b, c, oh, ow, lane: te.sum(
            data[b, c, oh * strides[0] + kh * dilation[0], ow * strides[1] + kw * dilation[1],
                 lane].astype(out_dtype) * weight[c, kh, kw, lane].astype(out_dtype),
            axis=[kh, kw]),
        name="depthwise_conv2d_NCHWc")


def _padded(data: Any, kernel_h: int, kernel_w: int, strides: list[int], padding: list[int],
            dilation: list[int]) -> tuple[Any, int, int]:
    """(data (N, C/b, H, W, b) zero-padded by Relax's (top, left, bottom, right), the output's
    height and width)."""
    from tvm import topi

    _, _, height, width, _ = (int(d) for d in data.shape)
    top, left, bottom, right = padding
    out_h = (height + top + bottom - (kernel_h - 1) * dilation[0] - 1) // strides[0] + 1
    out_w = (width + left + right - (kernel_w - 1) * dilation[1] - 1) // strides[1] + 1
    if top or left or bottom or right:
        data = topi.nn.pad(data, (0, 0, top, left, 0), (0, 0, bottom, right, 0),
                           name="data_pad")
    return data, out_h, out_w
