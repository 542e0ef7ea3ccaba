"""Batch norm folded into the convolution before it (the prepared graphs, core/graphs.py).

In inference a batch norm after a convolution is a per-channel affine map, and so is a
change of the convolution's weights: with s = gamma / sqrt(var + eps),

    bn(conv(x, W) + b) = conv(x, W * s) + (b - mean) * s + beta.

Decomposed as it is otherwise (DecomposeOpsForInference), the norm stays in the fused
convolution's epilogue as subtract, divide, multiply and add on every output element; the
divide is a vector division (several times an FMA's cost, and LLVM keeps it one without
fast-math), and on the narrow convolutions of a MobileNet (a 1x1 from 24 channels does 24
multiply-adds an output) that epilogue is a real part of the task. Folded, what remains is
one add of a per-channel bias; the new weight and bias depend on the weights alone, so the
prepared graphs compute them once at load (workloads._pretransform_weights). On an AVX-512
Xeon, tuned, mobilenet_v2's narrow 1x1 convolutions ran 11-28% faster and the network 5%,
and searches took 12-25% less time a trial (docs/tuning-results.md, 2026-11-26).
"""

from __future__ import annotations

from typing import Any

from tasks.relax_rewrite import bound_call, call_rewriting_pass


def batch_norm_into_conv() -> Any:
    """A Relax pass, before DecomposeOpsForInference: an inference batch norm over the
    channels of an NCHW/OIHW relax.nn.conv2d's output, or of that output plus a per-channel
    bias (a PyTorch conv with bias=True), becomes the convolution with scaled weights plus
    one bias. Any other batch norm is left as it is. A convolution whose output something
    else reads too is computed twice (both forms are needed); in the networks we know each
    convolution before a norm feeds only the norm."""
    from tvm import relax

    def fold(builder: Any, norm: Any) -> Any:
        attrs = norm.attrs
        if bool(attrs.training) or int(attrs.axis) != 1:
            return norm
        data, gamma, beta, mean, var = norm.args
        conv, bias = _conv_and_bias(builder, data)
        if conv is None:
            return norm
        channels = int(conv.args[1].ty.shape[0])
        eps = relax.const(float(attrs.epsilon), var.ty.dtype)
        scale = relax.op.divide(relax.const(1.0, var.ty.dtype),
                                relax.op.sqrt(relax.op.add(var, eps)))
        if bool(attrs.scale):
            scale = relax.op.multiply(scale, gamma)
        scale = builder.emit(scale)
        shift = relax.op.negative(mean) if bias is None else relax.op.subtract(
            relax.op.reshape(bias, [channels]), mean)
        shift = relax.op.multiply(shift, scale)
        if bool(attrs.center):
            shift = relax.op.add(shift, beta)
        weight = conv.args[1]
        scaled = builder.emit(relax.op.multiply(
            weight, relax.op.reshape(scale, [channels] + [1] * (len(weight.ty.shape) - 1))))
        folded = builder.emit(relax.Call(conv.op, [conv.args[0], scaled], conv.attrs,
                                         conv.ty_args))
        out = builder.emit(relax.op.add(folded, relax.op.reshape(shift, [1, channels, 1, 1])))
        # batch_norm gives (output, mean, var); what read it reads index 0
        return relax.Tuple([out, mean, var])

    return call_rewriting_pass("relax.nn.batch_norm", fold, "BatchNormIntoConv")


def _conv_and_bias(builder: Any, data: Any) -> tuple[Any, Any]:
    """(the NCHW/OIHW conv2d call that `data` is, or is plus a (1, C, 1, 1) bias, and that
    bias or None), or (None, None)."""

    def plain_conv(call: Any) -> bool:
        attrs = call.attrs
        return (attrs.data_layout == "NCHW" and attrs.kernel_layout == "OIHW"
                and attrs.out_layout == "NCHW")

    conv = bound_call(builder, data, ["relax.nn.conv2d"])
    if conv is not None:
        return (conv, None) if plain_conv(conv) else (None, None)
    add = bound_call(builder, data, ["relax.add"])
    if add is None:
        return None, None
    for left, right in (add.args, add.args[::-1]):
        conv = bound_call(builder, left, ["relax.nn.conv2d"])
        if conv is None or not plain_conv(conv):
            continue
        channels = int(conv.args[1].ty.shape[0])
        shape = getattr(right.ty, "shape", None)
        if shape is not None and [int(d) for d in shape] == [1, channels, 1, 1]:
            return conv, right
    return None, None
