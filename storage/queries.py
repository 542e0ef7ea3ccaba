"""The read-side questions the upper floors ask of a store, one function each.

The SQL of tasks/, models/ and the CLI lives here (tests/test_layers.py keeps it so): callers
hold an open `Store` (read-only is enough) and get plain Python values or an Arrow table back.
"""

from __future__ import annotations

from typing import Any, Sequence

import duckdb
import pyarrow as pa

from core.errors import TenforgeError
from storage.store import Store

# Every measurement (errors too) with its candidate and the profile it ran on.
_MEASURED_ON = ("FROM measurements m JOIN candidates c USING (candidate_id) "
                "JOIN hardware h USING (hardware_id)")


# ----------------------------------------------------------------------------- measurements


def measured_profiles(store: Store) -> list[str]:
    """Every profile with measurements, by name."""
    return [n for (n,) in store.query(f"SELECT DISTINCT h.name {_MEASURED_ON} ORDER BY 1")]


def measurement_count(store: Store, hardware: str | None = None) -> int:
    """Measurements in the store (errors included), of one profile or of all."""
    if hardware is None:
        return int(store.scalar("SELECT count(*) FROM measurements"))
    return int(store.scalar(f"SELECT count(*) {_MEASURED_ON} WHERE h.name = ?", [hardware]))


def hardware_vectors(store: Store) -> dict[str, list[float]]:
    """Each stored profile's hardware feature vector."""
    return dict(store.query("SELECT name, feature_vector FROM hardware"))


def target_kinds(store: Store, profiles: Sequence[str]) -> set[str]:
    """The TVM target kinds (llvm, cuda, ...) of these stored profiles."""
    return {k for (k,) in store.query("SELECT DISTINCT target_kind FROM hardware WHERE name IN "
                                      "(SELECT unnest(?::VARCHAR[]))", [list(profiles)])}


def stored_target(store: Store, profile: str) -> tuple[str, str] | None:
    """(target kind, arch) of a profile the store holds data of, or None."""
    row = store.query("SELECT target_kind, arch FROM hardware WHERE name = ?", [profile])
    return (str(row[0][0]), str(row[0][1] or "")) if row else None


def network_names(store: Store) -> set[str]:
    return {n for (n,) in store.query("SELECT DISTINCT name FROM networks")}


def stored_network_tasks(store: Store, name: str, batch: int, input_size: int) -> list[int]:
    """The task ids the store lists for network `name` (its stored name) at this batch and
    size, in task id order; empty where it lists none."""
    rows = store.query(
        "SELECT nt.task_id FROM networks n JOIN network_tasks nt USING (network_id) "
        "WHERE n.name = ? AND n.batch = ? AND n.input_size = ? ORDER BY nt.task_id",
        [name, batch, input_size])
    return [task_id for (task_id,) in rows]


# A network's label: its name where the store holds it at one (batch, input size), else
# NAME@SIZE (and :BATCH when not 1) for each, the syntax bench/collect_seed.sh takes. A
# network-level score is about one network instance; a held-out family is every instance.
_NETWORK_LABEL = ("CASE WHEN count(*) OVER (PARTITION BY name) = 1 THEN name ELSE name || '@' || "
                  "input_size || CASE WHEN batch = 1 THEN '' ELSE ':' || batch END END")


def network_task_weights(store: Store) -> list[tuple[str, str, int, float]]:
    """(workload_hash, network label, occurrences, the task's FLOPs) for every task of every
    stored network."""
    return store.query(f"WITH labelled AS (SELECT network_id, {_NETWORK_LABEL} AS label FROM "
                       "networks) SELECT t.workload_hash, l.label, sum(nt.weight), t.flops FROM "
                       "network_tasks nt JOIN tasks t USING (task_id) JOIN labelled l USING "
                       "(network_id) GROUP BY ALL")


def _network_filter(networks: Sequence[str] | None) -> str:
    return ("AND t.task_id IN (SELECT nt.task_id FROM network_tasks nt JOIN networks n "
            "USING (network_id) WHERE n.name IN (SELECT unnest($networks)))" if networks else "")


def _data_params(hardware: Sequence[str], networks: Sequence[str] | None,
                 extractor: str) -> dict[str, Any]:
    params: dict[str, Any] = {"hardware": list(hardware), "extractor": extractor}
    if networks:
        params["networks"] = list(networks)
    return params


def measured_inventory(store: Store, hardware: Sequence[str], networks: Sequence[str] | None,
                       extractor: str) -> tuple[int, set[str]]:
    """(how many measured, featurized candidates these profiles have within `networks` when
    given, the networks their tasks belong to): one counting query, where `measured_features`
    loads everything."""
    count, names = store.con.execute(f"""
        SELECT count(DISTINCT c.candidate_id),
               list(DISTINCT n.name) FILTER (WHERE n.name IS NOT NULL)
        FROM measurements m
        JOIN candidates c USING (candidate_id)
        JOIN tasks t ON t.task_id = c.task_id
        JOIN hardware h ON h.hardware_id = c.hardware_id
        JOIN features f ON f.candidate_id = c.candidate_id AND f.extractor = $extractor
        LEFT JOIN network_tasks nt ON nt.task_id = t.task_id
        LEFT JOIN networks n ON n.network_id = nt.network_id
        WHERE h.name IN (SELECT unnest($hardware)) {_network_filter(networks)}""",
        _data_params(hardware, networks, extractor)).fetchone()
    return int(count), set(names or [])


def network_coverage_shares(store: Store, hardware: Sequence[str]) -> dict[str, float]:
    """{network name: the largest share of one of its instances' work (weight x FLOPs; weight
    where no FLOPs are known) that one of these profiles measured successfully}: what
    models.evaluate scores as a network where it reaches MIN_NETWORK_COVERAGE. Counted over
    tasks with any successful measurement; the evaluation also drops a task with fewer than
    two, so this is an upper bound, cheap enough for a flow's validation."""
    rows = store.con.execute("""
        WITH work AS (
            SELECT n.network_id, n.name, nt.task_id, nt.weight * t.flops AS by_flops,
                   nt.weight AS by_weight
            FROM networks n JOIN network_tasks nt USING (network_id) JOIN tasks t USING (task_id)),
        measured AS (
            SELECT DISTINCT h.name AS hw, c.task_id
            FROM measurements m JOIN candidates c USING (candidate_id)
            JOIN hardware h USING (hardware_id)
            WHERE m.error_kind IS NULL AND h.name IN (SELECT unnest($hardware))),
        shares AS (
            SELECT w.name, coalesce(
                sum(w.by_flops) FILTER (WHERE m.task_id IS NOT NULL) / nullif(sum(w.by_flops), 0),
                sum(w.by_weight) FILTER (WHERE m.task_id IS NOT NULL) / sum(w.by_weight)) AS share
            FROM work w CROSS JOIN (SELECT DISTINCT hw FROM measured) p
            LEFT JOIN measured m ON m.task_id = w.task_id AND m.hw = p.hw
            GROUP BY w.network_id, w.name, p.hw)
        SELECT name, max(coalesce(share, 0)) FROM shares GROUP BY name""",
        {"hardware": list(hardware)}).fetchall()
    return {name: float(share) for name, share in rows}


_LATENCY = {"mean": "m.mean_latency_s",
            "median": "coalesce(list_median(m.run_secs), m.mean_latency_s)"}


def measured_features(store: Store, hardware: Sequence[str], networks: Sequence[str] | None,
                      extractor: str, with_traces: bool = False,
                      sources: Sequence[str] = (), latency: str = "mean") -> pa.Table:
    """The newest measurement of every candidate with `extractor` features on these profiles
    (and networks; and candidate sources: sampled, tuning, imported; empty = all), with its task
    and features (and trace JSON): what a cost-model dataset is built from. `latency_s` is the
    mean of the measurement's repeats or, with latency "median", their median (a row that kept
    no repeats keeps its mean)."""
    params = _data_params(hardware, networks, extractor)
    if sources:
        params["sources"] = list(sources)
    return store.con.execute(f"""
        SELECT c.candidate_id, h.name AS hardware, t.workload_hash, t.task_name, t.flops,
               {_LATENCY[latency]} AS latency_s, f.n_stores, f.dim, f."values"
               {", c.trace_json" if with_traces else ""}
        FROM measurements m
        JOIN candidates c USING (candidate_id)
        JOIN tasks t ON t.task_id = c.task_id
        JOIN hardware h ON h.hardware_id = c.hardware_id
        JOIN features f ON f.candidate_id = c.candidate_id AND f.extractor = $extractor
        WHERE h.name IN (SELECT unnest($hardware)) {_network_filter(networks)}
              {"AND c.source IN (SELECT unnest($sources))" if sources else ""}
        QUALIFY row_number() OVER (PARTITION BY c.candidate_id ORDER BY m.measured_at DESC) = 1
        -- content, not store-local ids: two loads of the same shards number candidates in
        -- whatever order DuckDB's parallel insert met them, and tie ranking and subsampling
        -- follow row order (models/dataset.py's fingerprint relies on this order too)
        ORDER BY h.name, t.workload_hash, c.schedule_hash""", params).to_arrow_table()


# ----------------------------------------------------------------------------- calibration


def fastest_schedules(store: Store, hardware: str, per_task: int,
                      exclude_networks: Sequence[str] = ()) -> list[tuple[str, str, float, str,
                                                                           float]]:
    """(task workload hash, name, FLOPs, trace JSON, mean latency s) of the `per_task` fastest
    valid measurements of every task measured on `hardware`, except the tasks of networks
    whose name is one of `exclude_networks` or starts with it and "+" (any graph of them)."""
    return store.con.execute("""
        WITH excluded AS (
            SELECT DISTINCT nt.task_id FROM network_tasks nt JOIN networks n USING (network_id)
            WHERE EXISTS (SELECT 1 FROM (SELECT unnest($exclude::VARCHAR[]) AS x)
                          WHERE n.name = x OR starts_with(n.name, x || '+'))),
        ranked AS (
            SELECT c.task_id, c.trace_json, m.mean_latency_s, row_number() OVER (
                PARTITION BY c.task_id ORDER BY m.mean_latency_s, c.candidate_id) AS r
            FROM measurements m JOIN candidates c USING (candidate_id)
            JOIN hardware h USING (hardware_id)
            WHERE h.name = $hardware AND m.error_kind IS NULL AND m.mean_latency_s > 0
              AND c.task_id NOT IN (SELECT task_id FROM excluded))
        SELECT t.workload_hash, t.task_name, t.flops, r.trace_json, r.mean_latency_s
        FROM ranked r JOIN tasks t USING (task_id) WHERE r.r <= $per_task
        ORDER BY t.task_id, r.r""",
        {"hardware": hardware, "per_task": per_task, "exclude": list(exclude_networks)}).fetchall()


def calibration_pool(store: Store, target: str, target_kind: str) -> list[tuple]:
    """(task_id, task_name, FLOPs x occurrences, profile, candidate_id, latency) of every
    successful measurement on the other profiles of the same target kind."""
    return store.query(
        "SELECT c.task_id, t.task_name, t.flops * coalesce(max(nt.weight), 1) AS load, "
        f"h.name, c.candidate_id, m.mean_latency_s {_MEASURED_ON} JOIN tasks t USING (task_id) "
        "LEFT JOIN network_tasks nt USING (task_id) "
        "WHERE m.error_kind IS NULL AND h.name <> ? AND h.target_kind = ? "
        "GROUP BY c.task_id, t.task_name, t.flops, h.name, c.candidate_id, m.mean_latency_s",
        [target, target_kind])


def candidate_copies(store: Store, candidate_ids: Sequence[int], extractor: str) -> list[tuple]:
    """(schedule_hash, trace_json, design_space, sample_seed, n_stores, dim, values) of these
    candidates: what it takes to stage them on another profile."""
    return store.query(
        "SELECT c.schedule_hash, c.trace_json, c.design_space, c.sample_seed, f.n_stores, "
        "f.dim, f.\"values\" FROM candidates c JOIN features f USING (candidate_id) "
        "WHERE c.candidate_id IN (SELECT unnest(?)) AND f.extractor = ?",
        [list(candidate_ids), extractor])


# ----------------------------------------------------------------------------- models


def best_model_id(store: Store, hardware: str, extractor: str) -> str | None:
    """The best registered model for `hardware`: best top-1 measured on its held-out tasks,
    then trained on its data, then best held-out top-1, then newest (see tasks/retune.py)."""
    rows = store.query(
        "WITH here AS (SELECT model_id, arg_max(TRY_CAST(metrics_json->>'peak1' AS DOUBLE), "
        "evaluated_at) AS top1_here FROM model_evaluations WHERE hardware = ? GROUP BY 1) "
        "SELECT m.model_id FROM models m LEFT JOIN here USING (model_id) "
        "WHERE m.data_spec_json->>'$.extractor' = ? "
        # a model of the assembly columns ranks built candidates only (models/ms_adapter.py)
        "AND NOT coalesce(TRY_CAST(m.data_spec_json->>'$.asm' AS BOOLEAN), false) "
        "ORDER BY here.top1_here DESC NULLS LAST, "
        "list_contains(CAST(m.data_spec_json->'$.hardware' AS VARCHAR[]), ?) DESC, "
        "TRY_CAST(m.metrics_json->>'peak1' AS DOUBLE) DESC NULLS LAST, m.created_at DESC "
        "LIMIT 1", [hardware, extractor, hardware])
    return rows[0][0] if rows else None


def candidate_traces(store: Store, candidate_ids: Sequence[int]) -> dict[int, str]:
    """candidate id -> its trace JSON."""
    return dict(store.query("SELECT candidate_id, trace_json FROM candidates WHERE candidate_id "
                            "IN (SELECT unnest(?))", [list(candidate_ids)]))


def candidate_programs(store: Store, candidate_ids: Sequence[int]) -> list[tuple]:
    """(candidate id, workload hash, task module JSON, trace JSON, target JSON) of each
    candidate, grouped by task: what rebuilding them needs (tasks/compiled_code.py)."""
    return store.query(
        "SELECT c.candidate_id, t.workload_hash, t.mod_json, c.trace_json, h.target_json "
        "FROM candidates c JOIN tasks t USING (task_id) JOIN hardware h USING (hardware_id) "
        "WHERE c.candidate_id IN (SELECT unnest(?)) ORDER BY t.workload_hash, c.candidate_id",
        [list(candidate_ids)])


def unbuildable(store: Store, candidate_ids: Sequence[int]) -> set[int]:
    """Those of these candidates whose build timed out, crashed or was cut (a tuning run's
    build cap) when they were measured: building them again costs the same minutes
    (tasks/compiled_code.py skips them)."""
    return {c for (c,) in store.query(
        "SELECT DISTINCT candidate_id FROM measurements WHERE candidate_id IN (SELECT unnest(?)) "
        "AND error_kind IN ('build_timeout', 'build_crash', 'build_cut')", [list(candidate_ids)])}


def model_splits(store: Store) -> list[tuple[str, str, str | None]]:
    """(model id, artifact path, split JSON) of every registered model."""
    return store.query("SELECT model_id, path, split_json FROM models ORDER BY created_at")


def measured_top1(store: Store, model_id: str, hardware: str) -> float | None:
    """The newest measured top-1 of `model_id` on `hardware`'s held-out tasks."""
    return store.scalar("SELECT TRY_CAST(metrics_json->>'peak1' AS DOUBLE) FROM "
                        "model_evaluations WHERE model_id = ? AND hardware = ? ORDER BY "
                        "evaluated_at DESC LIMIT 1", [model_id, hardware])


# ----------------------------------------------------------------------------- tuning


def unfinished_retunes(store: Store, besides: str, hardware: str, network: str,
                       batch_size: int, graph: str = "exported") -> list[str]:
    """Run ids of retunes of this network, batch, graph preparation and profile that never
    completed, recorded no result and were not resumed since, newest first (`besides`: the
    current run)."""
    return [r for (r,) in store.query(
        "SELECT run_id FROM runs WHERE flow = 'retune' AND status NOT IN ('completed', "
        "'resumed') AND "
        "run_id <> ? AND hardware = ? AND json_extract_string(parameters_json, 'network') "
        "= ? AND TRY_CAST(json_extract_string(parameters_json, 'batch_size') AS INTEGER) "
        "= ? AND coalesce(json_extract_string(parameters_json, 'graph'), 'exported') = ? "
        "AND run_id NOT IN (SELECT tuning_id FROM tuning_runs) ORDER BY started_at DESC",
        [besides, hardware, network, batch_size, graph])]


def tuning_curve_points(store: Store, tuning_id: str) -> list[tuple[int, float, float]]:
    """(trials, search seconds, estimated ms) of a tuning run, where an estimate exists."""
    return store.query("SELECT trials, wall_s, estimated_latency_s * 1e3 FROM tuning_curve "
                       "WHERE tuning_id = ? AND estimated_latency_s IS NOT NULL ORDER BY point",
                       [tuning_id])


def tuning_run(store: Store, tuning_id: str) -> dict[str, Any] | None:
    """One tuning run's row, or None."""
    cursor = store.con.execute("SELECT * FROM tuning_runs WHERE tuning_id = ?", [tuning_id])
    row = cursor.fetchone()
    return None if row is None else dict(zip([d[0] for d in cursor.description], row))


def fastest_tuning_id(store: Store, network: str, hardware: str) -> str | None:
    """The tuning run of `network` on `hardware` with the lowest end-to-end latency."""
    return store.scalar("SELECT tuning_id FROM tuning_runs WHERE network = ? AND hardware = ? "
                        "ORDER BY tuned_latency_s, created_at DESC LIMIT 1", [network, hardware])


# ----------------------------------------------------------------------------- workloads


def workload_row(store: Store, name: str) -> dict[str, Any] | None:
    """A registered user network (tasks/sources.py), or None."""
    cursor = store.con.execute("SELECT * FROM workloads WHERE name = ?", [name])
    row = cursor.fetchone()
    return None if row is None else dict(zip([d[0] for d in cursor.description], row))


def registered_workloads(store: Store) -> list[tuple]:
    """(name, kind, source, input signature JSON, task count, registered at) of each."""
    return store.query("SELECT name, kind, source, inputs_json, json_array_length(tasks_json), "
                       "registered_at FROM workloads ORDER BY name")


# ----------------------------------------------------------------------------- users


def user_query(store: Store, sql: str) -> tuple[list[str], list[tuple]]:
    """A person's own SQL (`tenforge query`): (column names, rows); none for a statement."""
    try:
        cursor = store.con.execute(sql)
    except duckdb.Error as exc:
        raise TenforgeError(f"query failed: {str(exc).splitlines()[0]}") from None
    if cursor.description is None:
        return [], []
    return [d[0] for d in cursor.description], cursor.fetchall()
