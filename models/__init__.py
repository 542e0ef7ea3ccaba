"""Cost models, datasets, splits, metrics, transfer, the MetaSchedule adapter (no Prefect)."""
