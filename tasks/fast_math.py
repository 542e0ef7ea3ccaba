"""exp, erf, tanh and what is made of them (softmax, GELU, sigmoid, SiLU) as the fast float32
approximations of TOPI, in the prepared graphs (core/graphs.py, tasks/workloads.py).

Legalized as exported, these lower to `tir.exp` / `tir.erf` / `tir.tanh`, which LLVM turns into
a call of the C library's scalar expf / erff / tanhf for every element, vectorized loop or
not. On the Zen 4 (one thread, 128 x 3072 floats, the same vectorized schedule, 2026-11-27):

    erf 3.03 ms, fast_erf 0.135 ms (22x; PyTorch's whole GELU 0.188 ms)
    exp 1.24 ms, fast_exp 0.088 ms (14x);  tanh 2.53 ms, fast_tanh 0.105 ms (24x)

BERT's GELU tasks were 8% of its tuned latency there, and no schedule MetaSchedule can pick
vectorizes a library call. TOPI's approximations are polynomials in plain arithmetic
(fast_exp clamps its input to +-88, where float32's exp over- or underflows anyway): GELU
through fast_erf was within 9.5e-7 of the exact GELU on normal inputs, and untuned BERT within
4.3e-6 of PyTorch (largest output 4.46) either way. They keep the exported primitive
functions' names, so a task is named as before.

Relax's own FastMathTransform covers exp, erf, tanh and softmax but not the GELU, sigmoid and
SiLU operators, which legalize to erf / exp directly; these legalizations cover all of them in
one place. Other dtypes keep the exact functions (TOPI's fast_* fall back to them)."""

from __future__ import annotations

import math
from typing import Any


def fast_math_legalizations() -> dict[str, Any]:
    """Relax operator name -> a LegalizeOps rule (block builder, call) -> expression that
    computes the operator with TOPI's fast approximations."""
    from tvm import tirx, topi

    def unary(name_hint: str, compute: Any) -> Any:
        def legalize(bb: Any, call: Any) -> Any:
            return bb.call_te(compute, call.args[0], primfunc_name_hint=name_hint)
        return legalize

    def gelu(x: Any) -> Any:  # x * Phi(x), Phi(x) = (1 + erf(x / sqrt 2)) / 2
        half = tirx.const(0.5, x.dtype)
        return x * (half + topi.fast_erf(x * tirx.const(0.5 ** 0.5, x.dtype)) * half)

    def gelu_tanh(x: Any) -> Any:  # GELU's tanh form (GPT-2)
        one, half = tirx.const(1.0, x.dtype), tirx.const(0.5, x.dtype)
        inner = (tirx.const(math.sqrt(2.0 / math.pi), x.dtype) * x
                 * (one + tirx.const(0.044715, x.dtype) * x * x))
        return half * x * (one + topi.fast_tanh(inner))

    def sigmoid(x: Any) -> Any:
        one = tirx.const(1.0, x.dtype)
        return one / (one + topi.fast_exp(-x))

    def softmax(bb: Any, call: Any) -> Any:
        return bb.call_te(topi.nn.fast_softmax, call.args[0], int(call.attrs.axis),
                          primfunc_name_hint="softmax")

    return {
        "relax.exp": unary("tir_exp", topi.fast_exp),
        "relax.erf": unary("erf", topi.fast_erf),
        "relax.tanh": unary("tir_tanh", topi.fast_tanh),
        "relax.sigmoid": unary("tir_sigmoid", sigmoid),
        "relax.nn.gelu": unary("gelu", gelu),
        "relax.nn.gelu_tanh": unary("gelu_tanh", gelu_tanh),
        "relax.nn.silu": unary("silu", lambda x: x * sigmoid(x)),
        "relax.nn.softmax": softmax,
    }
