"""Plain-text summaries of a store, for the terminal and flow logs."""

from __future__ import annotations

from storage.store import Store

SAMPLE_QUERY = ("SELECT hardware, network, count(*) AS measured, count(error_kind) AS errors, "
                "round(min(mean_latency_s) * 1e6, 2) AS fastest_us FROM v_measurements "
                "GROUP BY ALL ORDER BY ALL")


def format_table(header: list[str], rows: list[tuple]) -> str:
    """A fixed-width text table (numbers right-aligned)."""
    cells = [[("" if v is None else str(v)) for v in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h)
              for i, h in enumerate(header)]
    numeric = [all(isinstance(row[i], (int, float)) or row[i] is None for row in rows)
               for i in range(len(header))]

    def fmt(values: list[str]) -> str:
        return "  ".join(v.rjust(w) if num else v.ljust(w)
                         for v, w, num in zip(values, widths, numeric)).rstrip()

    return "\n".join([fmt(header), fmt(["-" * w for w in widths]), *map(fmt, cells)])


def markdown_table(header: list[str], rows: list[tuple]) -> str:
    cells = [["" if v is None else str(v) for v in row] for row in rows]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in cells])


def measurement_summary(db: str) -> str:
    """Where the data is, what it holds per hardware and network, and how to query it."""
    with Store(db, read_only=True) as store:
        cur = store.con.execute(SAMPLE_QUERY)
        header = [d[0] for d in cur.description]
        table = format_table(header, cur.fetchall())
    return (f"\nstore: {db}\n\n{table}\n\n"
            f"query it:        ./run query \"{SAMPLE_QUERY}\" --db {db}\n"
            f"or with DuckDB:  .venv/bin/duckdb -readonly {db} "
            f"\"SELECT * FROM v_measurements LIMIT 5\"\n"
            f"(from the project root; `tenforge` and `duckdb` directly where .venv/bin is on "
            f"PATH)\n")


def model_leaderboard(db: str, limit: int = 20, markdown: bool = False,
                      hardware: str | None = None) -> str:
    """Registered models, best held-out top-1 peak score first (pre-trained ones, scored on
    validation tasks only, last), with the profiles each was trained on; `hardware` keeps the
    models whose training data includes that profile."""
    with Store(db, read_only=True) as store:
        rows = store.query(
            "SELECT model_id, kind, array_to_string(CAST(data_spec_json->'$.hardware' AS "
            "VARCHAR[]), ',') AS trained_on, coalesce(parent_model_id, '') AS parent, "
            "split_json->>'kind' AS split, train_rows, "
            "round(TRY_CAST(metrics_json->>'peak1' AS DOUBLE), 4) AS test_peak1, "
            "round(TRY_CAST(metrics_json->>'pairwise' AS DOUBLE), 4) AS test_pairwise, "
            "round(train_s, 1) AS train_s, "
            "coalesce(study_name || ' #' || trial_number, '') AS study, "
            "left(created_at::VARCHAR, 19) FROM models WHERE ? IS NULL OR list_contains("
            "CAST(data_spec_json->'$.hardware' AS VARCHAR[]), ?) "
            "ORDER BY test_peak1 DESC NULLS LAST, created_at DESC LIMIT ?",
            [hardware, hardware, limit])
    header = ["model", "kind", "trained on", "parent", "split", "train rows", "test peak1",
              "test pairwise", "train s", "study #trial", "created"]
    if not rows:
        return f"no registered models in {db}" + (f" trained on {hardware}" if hardware else "")
    return (markdown_table if markdown else format_table)(header, rows)


def tuning_comparison(db: str, network: str, hardware: str, markdown: bool = False) -> str:
    """The newest tuning run of `network` on `hardware` per cost model and scheduler (full
    search or instant), side by side."""
    with Store(db, read_only=True) as store:
        rows = store.query(
            "SELECT cost_model, scheduler, trials, round(search_s, 1), "
            "round(untuned_latency_s * 1e3, 4), round(tuned_latency_s * 1e3, 4), "
            "round(untuned_latency_s / tuned_latency_s, 2), "
            "round(estimated_latency_s * 1e3, 4), tuned_functions || '/' || tir_functions, "
            "tuning_id FROM tuning_runs WHERE network = ? AND hardware = ? "
            "QUALIFY row_number() OVER (PARTITION BY cost_model, scheduler "
            "ORDER BY created_at DESC) = 1 "
            "ORDER BY tuned_latency_s", [network, hardware])
    header = ["cost model", "scheduler", "trials", "search s", "untuned ms", "tuned ms",
              "speedup", "est. tasks ms", "tuned fns", "tuning id"]
    if not rows:
        return f"no tuning runs of {network} on {hardware} in {db}"
    if markdown:
        return markdown_table(header, rows)
    return (f"\n{network} on {hardware}, end to end (median; 'est. tasks ms' = tuned tasks' "
            f"summed cold-cache latencies):\n" + format_table(header, rows))


# The sections of `tenforge report`: (title, query over the documented views, how a row names
# its hardware, order and limit). A hardware filter applies to the rows before the limit.
REPORT_SECTIONS = [
    ("Measurements per hardware",
     "SELECT hardware, count(DISTINCT workload_hash) AS tasks, count(*) AS measured, "
     "count(error_kind) AS errors, round(max(gflops), 1) AS best_gflops, "
     "left(max(measured_at)::VARCHAR, 19) AS last_measured "
     "FROM v_candidate_measurements GROUP BY ALL", "hardware = $hw", "ORDER BY ALL"),
    ("Best latency per network and hardware (sum of best task latencies x occurrences; best "
     "tuned end-to-end)",
     "SELECT network, hardware, tasks_measured, round(sum_best_task_s * 1e3, 3) AS "
     "sum_best_tasks_ms, round(best_tuned_s * 1e3, 3) AS best_tuned_ms, best_cost_model, "
     "tuning_runs FROM v_best_latency", "hardware = $hw", "ORDER BY ALL"),
    ("Model leaderboard (held-out top-1)",
     "SELECT model_id, kind, array_to_string(trained_on, ',') AS trained_on, "
     "round(top1, 4) AS top1, round(pairwise, 4) AS pairwise, train_rows, "
     "coalesce(parent_model_id, '') AS parent, created_at FROM v_model_leaderboard",
     "list_contains(string_split(trained_on, ','), $hw)",
     "ORDER BY top1 DESC NULLS LAST, created_at DESC LIMIT 10"),
    ("Tuning history (newest first)",
     "SELECT left(created_at::VARCHAR, 19) AS at, network, hardware, cost_model, scheduler, "
     "trials, round(search_s, 1) AS search_s, round(untuned_latency_s * 1e3, 3) AS untuned_ms, "
     "round(tuned_latency_s * 1e3, 3) AS tuned_ms, round(speedup, 2) AS speedup "
     "FROM v_tuning_history", "hardware = $hw", "ORDER BY \"at\" DESC LIMIT 10"),
]


def store_report(db: str, markdown: bool = False, hardware: str | None = None) -> str:
    """Everything a person asks first of a store, from the documented views (only `hardware`'s
    rows, and the models trained on its data, when given)."""
    heading = f"tenforge report: {db}" + (f" (hardware {hardware})" if hardware else "")
    parts = [f"# {heading}" if markdown else heading]
    with Store(db, read_only=True) as store:
        for title, sql, on_hardware, order in REPORT_SECTIONS:
            cur = store.con.execute(f"SELECT * FROM ({sql}) WHERE $hw IS NULL OR {on_hardware} "
                                    f"{order}", {"hw": hardware})
            names = [d[0] for d in cur.description]
            keep = [i for i, n in enumerate(names) if n != "created_at"]  # for ordering only
            rows = [tuple(r[i] for i in keep) for r in cur.fetchall()]
            table = (markdown_table if markdown else format_table)(
                [names[i] for i in keep], rows) if rows else "(nothing yet)"
            parts.append(f"## {title}\n\n{table}" if markdown else f"{title}:\n{table}")
    return "\n\n".join(parts) + "\n"
