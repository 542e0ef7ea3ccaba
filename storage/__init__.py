"""DuckDB storage: the schema (SQL, numbered migrations), the Store gateway, MetaSchedule
interop."""
