"""models/__init__ exposes a chosen public surface, loaded on first use."""

import subprocess
import sys

import models


def test_every_public_name_resolves():
    for name in models.__all__:
        assert getattr(models, name) is not None, name


def test_importing_models_loads_no_heavy_library():
    code = ("import sys; sys.path.insert(0, '.'); import models; "
            "print(sorted(m for m in ('torch', 'xgboost', 'tvm', 'prefect') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
