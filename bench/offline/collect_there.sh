#!/usr/bin/env bash
# On a machine without a package index, from a copy of this checkout: unpack the site parts
# that bench/offline/pack_site.sh made, check TVM sees the hardware, and collect.
#
#   PARTS=/tmp/parts bench/offline/collect_there.sh PROFILE NETWORKS CANDIDATES DB [CORES]
#   e.g. bench/offline/collect_there.sh gpu-h100 resnet18,bert 32 /tmp/gpu.duckdb 8-15
#   GRAPH=fp16 ... prepares the networks that way (collect --graph; fp16: tensor cores)
#   SIMT=1 ... also samples each tensor-core task's SIMT space (collect --simt)
#   BATCH=N, INPUT_SIZE=N ... collect --batch-size / --input-size (new shapes: new tasks)
#   REUSE_TASKS=1 ... collect --reuse-tasks: networks DB lists already are not imported again
#     (a presampled or resumed store: ~70 s of a 7-minute lease call went to imports)
#
# A GPU profile is declared in the file $TENFORGE_HARDWARE names (default: this script's
# hardware.toml, an H100). Two collections may run at once (one per profile) on disjoint CORES
# (taskset); each gets its own Prefect home. Export the shards afterwards with
#   python3 -m tenforge.cli dataset export-seed --db DB --include-running --out /tmp/shards
set -euo pipefail
cd "$(dirname "$0")/../.."
profile=$1 networks=$2 candidates=$3 db=$4 cores=${5:-}
if [ ! -d /tmp/tenforge-site ]; then
    cat "${PARTS:-/tmp/parts}"/site.* | xz -dc -T0 | tar x -C /tmp
fi
export PYTHONPATH=/tmp/tenforge-site:$PWD PYTHONUNBUFFERED=1
cudart=$(find /usr/local/cuda/ /opt /usr/lib -name 'libcudart.so.13*' 2>/dev/null | head -1)
[ -n "$cudart" ] && export LD_LIBRARY_PATH=$(dirname "$cudart"):${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
export TENFORGE_HARDWARE=${TENFORGE_HARDWARE:-$PWD/bench/offline/hardware.toml}
python3 -c "import tvm; print('tvm', tvm.__version__, 'cuda', tvm.cuda(0).exist)"
python3 -m tenforge.cli hardware
pin=()
[ -n "$cores" ] && pin=(taskset -c "$cores")
PREFECT_HOME=/tmp/prefect-$profile "${pin[@]}" python3 -m tenforge.cli collect \
    --hardware "$profile" --networks "$networks" --candidates "$candidates" --seed 0 --db "$db" \
    ${GRAPH:+--graph "$GRAPH"} ${SIMT:+--simt} ${BATCH:+--batch-size "$BATCH"} \
    ${INPUT_SIZE:+--input-size "$INPUT_SIZE"} ${REUSE_TASKS:+--reuse-tasks}
