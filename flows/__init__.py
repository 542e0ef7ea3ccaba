"""Prefect flows: parameters, control flow, fan-out. No I/O, no math."""
