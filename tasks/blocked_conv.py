"""Convolution in NCHW[x]c (the nchw8c / nchw16c graphs, core/graphs.py) as a TE compute.

TVM's legalization of relax.nn.conv2d refuses channel-blocked layouts, and topi's
conv2d_NCHWc reduces over one fused input-channel axis (ic // b, ic % b) and wants a target
context. Here the input channel is two reduction axes, block and lane, so that MetaSchedule's
multi-level tiling sees plain loops: the output's innermost axis is the vector lane
(oc % b), and the weight (O/b, I/b, KH, KW, b_in, b_out) is read along it contiguously.
"""

from __future__ import annotations

from typing import Any


def legalize_conv2d(bb: Any, call: Any) -> Any:
    """LegalizeOps's rule for relax.nn.conv2d: TVM's own, except for channel-blocked data
    ("NCHW8c" from ConvertLayout), which gets conv2d_nchwc."""
    from tvm.relax.transform.legalize_ops.nn import _nn_conv2d

    attrs = call.attrs
    blocked = len(attrs.data_layout) > 4 and attrs.out_layout == attrs.data_layout
    if not blocked or int(attrs.groups) != 1:
        return _nn_conv2d(bb, call)  # TVM's rule (and its refusal of what it cannot do)
    return bb.call_te(
        conv2d_nchwc, call.args[0], call.args[1],
        strides=[int(s) for s in attrs.strides], padding=[int(p) for p in attrs.padding],
        dilation=[int(d) for d in attrs.dilation],
        out_dtype=attrs.out_dtype if attrs.out_dtype != "" else call.args[0].ty.dtype,
        primfunc_name_hint="conv2d_NCHWc")


def conv2d_nchwc(data: Any, weight: Any, strides: list[int], padding: list[int],
                 dilation: list[int], out_dtype: str) -> Any:
    """data (N, C/b, H, W, b), weight (O/bo, C/b, KH, KW, b, bo) -> (N, O/bo, OH, OW, bo).
    padding is Relax's (top, left, bottom, right)."""
    from tvm import te, topi

    n, ic_chunks, height, width, ic_block = (int(d) for d in data.shape)
    oc_chunks, _, kernel_h, kernel_w, _, oc_block = (int(d) for d in weight.shape)
    top, left, bottom, right = padding
    out_h = (height + top + bottom - (kernel_h - 1) * dilation[0] - 1) // strides[0] + 1
    out_w = (width + left + right - (kernel_w - 1) * dilation[1] - 1) // strides[1] + 1
    if top or left or bottom or right:
        data = topi.nn.pad(data, (0, 0, top, left, 0), (0, 0, bottom, right, 0),
                           name="data_pad")
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
