"""bench/packed_dense.py: its matmuls compute the same product, its arguments fail in one
line, and a tiny real run tunes them all side by side."""

import numpy as np
import pytest

from bench.packed_dense import VARIANTS, main, matmul, parse_shapes


def test_the_layouts_compute_the_same_product():
    from core.tvm_env import load_tvm

    tvm = load_tvm("llvm")
    rows, k, n, block = 4, 8, 32, 16
    rng = np.random.default_rng(0)
    x = rng.standard_normal((rows, k)).astype("float32")
    w = rng.standard_normal((k, n)).astype("float32")
    # (N/b, K, b): column block jo, row r, lane ji holds W[r, jo * b + ji]
    packed = np.ascontiguousarray(w.reshape(k, n // block, block).transpose(1, 0, 2))
    want = x @ w
    for variant in VARIANTS:
        lib = tvm.compile(tvm.IRModule({"main": matmul(variant, rows, k, n, block)}),
                          target="llvm")
        out_shape = (n // block, rows, block) if variant == "packed-out" else (rows, n)
        out = tvm.runtime.tensor(np.zeros(out_shape, "float32"))
        lib["main"](tvm.runtime.tensor(x), tvm.runtime.tensor(w if variant == "plain" else packed),
                    out)
        got = out.numpy()
        if variant == "packed-out":  # back to (M, N): y[i, jo * b + ji] = out[jo, i, ji]
            got = got.transpose(1, 0, 2).reshape(rows, n)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=variant)
    with pytest.raises(ValueError, match="unknown variant 'nhwc'"):
        matmul("nhwc", rows, k, n, block)


def test_bad_shapes_and_arguments_get_one_line_each():
    assert parse_shapes("768x3072,3072X768", 16) == [(768, 3072), (3072, 768)]
    with pytest.raises(SystemExit, match=r"'768' is not KxN \(e.g. 768x3072\)"):
        parse_shapes("768", 16)
    with pytest.raises(SystemExit, match="N a multiple of the block \\(16\\)"):
        parse_shapes("768x100", 16)
    with pytest.raises(SystemExit, match="needs K, N >= 1"):
        parse_shapes("0x32", 16)
    for bad in (["--trials", "0"], ["--seeds", "a,b"], ["--shapes", "8x9"]):
        with pytest.raises(SystemExit):
            main(bad)
    with pytest.raises(SystemExit, match="--hardware: unknown hardware profile 'no-such-cpu'"):
        main(["--hardware", "no-such-cpu"])


@pytest.mark.slow
def test_a_tiny_shape_is_tuned_in_every_layout_side_by_side(tmp_path, capsys):
    main(["--shapes", "32x32", "--rows", "8", "--trials", "4", "--work", str(tmp_path)])
    out = capsys.readouterr().out
    for variant in VARIANTS:
        assert f"  {variant} " in out
    assert "32x32 packed     " in out.split("median over seeds")[1]
    assert (tmp_path / "32x32-s0").is_dir()
