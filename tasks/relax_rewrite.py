"""Helpers for the graph preparations' Relax passes (tasks/blocked_conv.py,
tasks/batch_norm_fold.py): rewrite every call of one operator, and look back from a call's
argument to the operator that made it."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any


def call_rewriting_pass(op_name: str, rewrite: Any, name: str, per_function: bool = False
                        ) -> Any:
    """A module pass that replaces each call of Relax operator `op_name`, in every Relax
    function, by `rewrite(builder, call)` (the call itself where it does not apply), or
    `rewrite(builder, call, function)` with `per_function` (the function being rewritten, as
    it was: its parameters and attributes). The builder's `lookup_binding(var)` gives the
    (rewritten) call a dataflow var is bound to, so a rewrite can look back at the operators
    that made its arguments."""
    import tvm
    from tvm import relax

    op = tvm.ir.Op.get(op_name)

    @relax.expr_functor.mutator
    class _Rewriter(relax.PyExprMutator):
        def visit_call_(self, call: Any) -> Any:
            call = super().visit_call_(call)
            if isinstance(call, relax.Call) and call.op == op:
                if per_function:
                    return rewrite(self.builder_, call, self.function)
                return rewrite(self.builder_, call)
            return call

    @tvm.transform.module_pass(opt_level=0, name=name)
    def run(mod: Any, _context: Any) -> Any:
        rewriter = _Rewriter(mod)
        for gvar, function in list(mod.functions.items()):
            if isinstance(function, relax.Function):
                rewriter.function = function
                rewriter.builder_.update_func(gvar, rewriter.visit_expr(function))
        return rewriter.builder_.get()

    return run


def bound_call(builder: Any, expr: Any, op_names: Collection[str]) -> Any:
    """The call of one of the Relax operators `op_names` that dataflow var `expr` is bound to
    in `builder` (the rewritten one, inside a call_rewriting_pass), or None: a constant, a
    function parameter, another operator."""
    import tvm
    from tvm import relax

    call = builder.lookup_binding(expr) if isinstance(expr, relax.Var) else None
    if (isinstance(call, relax.Call) and isinstance(call.op, tvm.ir.Op)
            and call.op.name in op_names):
        return call
    return None
