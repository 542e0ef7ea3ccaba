"""core.tvm_env's import helpers."""

import inspect
import sys


def test_pseudo_files_are_looked_up_once_and_getmodule_is_restored(monkeypatch):
    """The CUDA intrinsics' import resolves each `<frozen ...>` frame's module once, not once a
    `@T.prim_func` (a scan of all of sys.modules each time); real files still resolve."""
    from core import tvm_env

    calls: list[str | None] = []
    original = inspect.getmodule

    def counting(obj, _filename=None):
        calls.append(_filename)
        return original(obj, _filename)

    monkeypatch.setattr(inspect, "getmodule", counting)
    here = sys._getframe()
    with tvm_env._pseudo_files_resolved_once():
        for _ in range(3):
            assert inspect.getmodule(here, "<frozen importlib._bootstrap>") is None
            assert inspect.getmodule(here, "<string>") is None
            assert inspect.getmodule(here, __file__) is sys.modules[__name__]
    assert calls.count("<frozen importlib._bootstrap>") == 1
    assert calls.count("<string>") == 1
    assert calls.count(__file__) == 3  # a real file is inspect's own cache's business
    assert inspect.getmodule is counting  # put back as it was
