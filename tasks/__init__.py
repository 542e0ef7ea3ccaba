"""Adapters: plain TVM/torch code (modules without Prefect) and the @task wrappers over them."""
