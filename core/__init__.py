"""The ground floor: value types and helpers every layer shares.

Nothing here imports flows/, tasks/, models/, storage/ or tenforge/ (tests/test_layers.py
enforces it): the hardware profile and measurement settings (`core.hardware`), task and
measurement records (`core.records`), the TVM environment loader (`core.tvm_env`), the error
type users see (`core.errors`), and small process/progress helpers.
"""
