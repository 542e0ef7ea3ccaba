#!/usr/bin/env bash
# Collect the seed dataset with the collect flow, into its own store (default data/seed.duckdb).
#
#   bench/collect_seed.sh [CANDIDATES_PER_TASK] [PROFILE ...]
#
# Resumable: every collect call measures only what is missing, so killing this script (or the
# machine going away) loses at most the batch in flight. Networks go round-robin over profiles so
# every profile gains data from the start. Export the result with
#   ./run dataset export-seed --db data/seed.duckdb
# Collecting while editing this checkout? Pin the code that measures:
#   git worktree add /work/seed-collector HEAD
#   SEED_DB=$PWD/data/seed.duckdb PYTHON=$PWD/.venv/bin/python /work/seed-collector/bench/collect_seed.sh
# Beside bench/tuning_matrix.py on the same machine, set TENFORGE_PAUSE_FILE to its --pause-file
# (default data/tuning-matrix/pause): the collection then waits while the matrix times networks.
set -euo pipefail
cd "$(dirname "$0")/.."
# Run from a pinned checkout (a git worktree) while you keep editing the main one: PYTHON may
# name another checkout's venv; PYTHONPATH makes this checkout's code the one that runs.
python=${PYTHON:-.venv/bin/python}
[ -x "$python" ] || { ./run hardware >/dev/null; python=.venv/bin/python; }
export PYTHONPATH=$PWD
cands=${1:-64}
shift || true
profiles=("$@")
if [ ${#profiles[@]} -eq 0 ]; then
    # this machine's one-thread profiles, whatever its CPU: native ISA and x86-64-v2
    mapfile -t profiles < <("$python" -c 'from tenforge.cli import bootstrap; bootstrap()
from tasks.hardware import detect_local_profiles
print("\n".join(p.name for p in detect_local_profiles() if p.num_threads == 1))')
fi
db=${SEED_DB:-data/seed.duckdb}
# A new store starts from the shipped seed, so candidates the seed measured (networks share
# tasks: GPT-2's dense layers are BERT's) are not measured again and new shards never overlap
# the old ones (loading deduplicates, and a shard must re-export as it was).
[ -e "$db" ] || "$python" -m tenforge.cli dataset load-seed --db "$db"
# Small, cheap networks first so every profile has every kind of task early on. NETWORKS (space
# separated) picks others or another order, e.g. the fastest to measure when extending; an
# entry NAME@SIZE:BATCH collects a zoo network at another input size and batch (TenSet's way of
# getting more distinct tasks from one architecture), e.g. NETWORKS="vit@160 resnet18@128:4";
# an entry NAME+GRAPH collects it prepared as `retune --graph GRAPH` does, e.g. resnet18+nhwc.
read -r -a networks <<< "${NETWORKS:-mlp tiny_cnn resnet18 mobilenet_v2 inception resnet50 bert}"
for entry in "${networks[@]}"; do
    network=${entry%%@*}
    variant=()
    if [[ $network == *+* ]]; then
        variant=(--graph "${network#*+}")
        network=${network%%+*}
    fi
    if [[ $entry == *@* ]]; then
        shape=${entry#*@}
        variant+=(--input-size "${shape%%:*}")
        [[ $shape == *:* ]] && variant+=(--batch-size "${shape#*:}")
    fi
    for profile in "${profiles[@]}"; do
        echo "=== $(date -Is) collect $entry on $profile ($cands per task) -> $db"
        "$python" -m tenforge.cli collect --hardware "$profile" --networks "$network" \
            "${variant[@]}" --candidates "$cands" --seed 0 --db "$db"
    done
done
echo "=== $(date -Is) seed collection complete"
