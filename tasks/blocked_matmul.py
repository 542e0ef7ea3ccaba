"""Matmuls by a weight with the weight packed in column blocks and the output computed in
blocks (the packed8 / packed16 graphs, core/graphs.py).

A linear layer reaches MetaSchedule as y[M, N] = x[M, K] @ W[K, N] (its weight's transpose
folded into the weights at load). Each step along K then jumps a whole row of N floats, and
the schedules MetaSchedule finds for it ran BERT's four big matmuls at 62-67% of the 480 MiB
Xeon's one-thread FMA peak (bench/task_roofline.py, docs/tuning-results.md). Tuned side by
side (bench/packed_dense.py, docs/packed-dense/), the same matmul with the weight packed as
(N/b, K, b) and the output computed as (N/b, M, b), b one vector of floats, ran 1.22-1.34x
faster, and 1.26x with those blocks written back to (M, N) in the same function. That last
form is what this module gives the graph: the operators after the matmul read (M, N) as
before, so nothing else changes layout. The packing depends on the weight alone:
LiftTransformParams moves it to load time (tasks/workloads.py), so `main` takes the weight
packed and no inference pays for it.
"""

from __future__ import annotations

from typing import Any

from tasks.relax_rewrite import call_rewriting_pass


def pack_weight_matmuls(block: int) -> Any:
    """A Relax pass, before LegalizeOps: relax.matmul(x, w) with w of the weights alone, 2-D
    (K, N) with N two or more blocks of `block` columns, and x of rank 2 or more ->
    pack_weight(w) then matmul_blocked(x, packed). Any other matmul (two activations, as
    attention's; a weight of one block, which is packed as it is) is left."""
    def packed(builder: Any, call: Any, function: Any) -> Any:
        data, weight = call.args
        shape = [int(d) for d in weight.ty.shape] if _static(weight) else []
        if (len(shape) != 2 or shape[1] % block or shape[1] <= block or not _static(data)
                or len(data.ty.shape) < 2 or not _of_weights(builder, weight, function)):
            return call
        # None where the matmul was built without one: the operands' dtype
        out_dtype = call.attrs.out_dtype if call.attrs.out_dtype is not None else data.ty.dtype
        weight_packed = builder.emit_te(pack_weight, weight, block,
                                        primfunc_name_hint="pack_weight")
        return builder.call_te(matmul_blocked, data, weight_packed, str(out_dtype),
                               primfunc_name_hint="matmul_blocked")

    return call_rewriting_pass("relax.matmul", packed, "PackWeightMatmuls", per_function=True)


def pack_weight(weight: Any, block: int) -> Any:
    """W (K, N) -> (N/b, K, b): each block of b columns contiguous along K."""
    from tvm import te

    depth, columns = (int(d) for d in weight.shape)
    return te.compute((columns // block, depth, block),
                      lambda chunk, k, lane: weight[k, chunk * block + lane], name="weight_packed")


def matmul_blocked(data: Any, weight: Any, out_dtype: str) -> Any:
    """x (..., M, K) @ W packed (N/b, K, b) -> (..., M, N), computed as (..., N/b, M, b)
    (blocked_output) and written back in the same function."""
    from tvm import te

    blocked = blocked_output(data, weight, out_dtype)
    *batch, chunks, rows, block = (int(d) for d in blocked.shape)
    return te.compute(
        (*batch, rows, chunks * block),
        lambda *i: blocked[(*i[:-2], i[-1] // block, i[-2], i[-1] % block)],
        name="matmul_unblocked")


def blocked_output(data: Any, weight: Any, out_dtype: str) -> Any:
    """x (..., M, K) @ W packed (N/b, K, b) -> (..., N/b, M, b): the vector lane innermost."""
    from tvm import te

    *batch, rows, depth = (int(d) for d in data.shape)
    chunks, _, block = (int(d) for d in weight.shape)
    k = te.reduce_axis((0, depth), name="k")
    return te.compute(
        (*batch, chunks, rows, block),
        lambda *i: te.sum(data[(*i[:-3], i[-2], k)].astype(out_dtype)
                          * weight[i[-3], k, i[-1]].astype(out_dtype), axis=k),
        name="matmul_blocked")


def _static(expr: Any) -> bool:
    """A tensor whose every dimension is a number (not a symbolic batch or length)."""
    from tvm import tirx

    shape = getattr(getattr(expr, "ty", None), "shape", None)
    return shape is not None and all(isinstance(d, tirx.IntImm) for d in shape)


def _of_weights(builder: Any, expr: Any, function: Any) -> bool:
    """`expr` depends on `function`'s weights (its parameters after the first num_input) and
    constants alone, through operators bound in `builder`: what LiftTransformParams moves to
    load time. A function without num_input has no weights."""
    import tvm
    from tvm import relax

    attrs = function.attrs
    if not attrs or "num_input" not in attrs:
        return False
    weights = set(function.params[int(attrs["num_input"]):])

    def derived(node: Any) -> bool:
        if isinstance(node, (tvm.ir.Constant, relax.ShapeExpr)):
            return True
        if not isinstance(node, relax.Var):
            return False
        if node in weights:
            return True
        bound = builder.lookup_binding(node)
        return isinstance(bound, relax.Call) and all(derived(a) for a in bound.args)

    return derived(expr)
