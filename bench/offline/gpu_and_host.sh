#!/usr/bin/env bash
# One lease of a lent GPU machine, from a copy of this checkout: collect its GPU (float16
# tensor-core graphs) and its host CPU (one thread) at once, on disjoint cores, each for at
# most MINUTES, then pack both stores' shards into OUT/shards.tar to bring back and `ingest`.
#
#   PARTS=/tmp/parts bench/offline/gpu_and_host.sh OUT [MINUTES=6] [GPU_NETWORKS] [CPU_NETWORKS]
#
# GPU_SIMT=1: the GPU collect samples each tensor-core task's SIMT space too (collect --simt).
# GPU_STORE=FILE[.xz]: start the GPU collect from a copy of a store bench/offline/presample.py
# filled with the same networks, GPU_CANDIDATES (default 8), seed 0, graph fp16 and GPU_SIMT:
# it then only measures.
# CPU_STORE=FILE[.xz]: the same for the host's collect (presample.py --hardware <one of the host's
# shard manifests, e.g. dataset/device/h200-20261130-s68/*-ce528b24.json> --graph exported
# --candidates 16, with the host's networks, CPU_BATCH and CPU_INPUT_SIZE): session 68's host
# spent 3.9 of its 7 minutes importing and sampling before it measured. A host of another
# profile samples again (slower, not wrong).
# GPU_BATCH / GPU_INPUT_SIZE and CPU_BATCH / CPU_INPUT_SIZE: each collect's --batch-size and
# --input-size (a presampled GPU store must have been sampled with the same).
#
# The GPU's profile is named after the card nvidia-smi reports (gpu-h100 / gpu-h200, declared
# in hardware.toml beside this script). A collection stopped at its deadline (SIGINT) keeps
# every candidate it measured; the shards say run_status "running"/"failed" then.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=$1 minutes=${2:-6}
gpu_networks=${3:-bert,resnet18} cpu_networks=${4:-resnet18,mobilenet_v2}
mkdir -p "$out" /tmp/collect; rm -rf /tmp/collect/shards-*
[ -d /tmp/tenforge-site ] || cat "${PARTS:-/tmp/parts}"/site.* | xz -dc -T0 | tar x -C /tmp || exit 1
card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$card" in
    *H200*) gpu=gpu-h200 ;;
    *H100*) gpu=gpu-h100 ;;
    *) echo "no profile for GPU '$card' in bench/offline/hardware.toml"; exit 2 ;;
esac
echo "GPU: $card -> $gpu; host: $(grep -m1 'model name' /proc/cpuinfo); $(nproc) cores"
lscpu > "$out/lscpu.txt"; nvidia-smi > "$out/nvidia-smi.txt"
cores=$(nproc); half=$((cores / 2))
limit=$((minutes * 60))
presampled() {  # copy presampled store $1 (xz: it shrinks ~100x, its traces repeat) to $2
    case "$1" in
        *.xz) xz -dc "$1" > "$2" ;;
        *) cp "$1" "$2" ;;
    esac
}
if [ -n "${GPU_STORE:-}" ]; then
    presampled "$GPU_STORE" /tmp/collect/gpu.duckdb
else  # sampling a float16 CUDA space is slow: session 48's 4-minute collect of mobilenet_v2
      # and resnet50 spent all of it sampling 66 tasks and measured nothing
    echo "warning: no GPU_STORE: the GPU collect samples on the lease (presample.py here is faster)"
fi
# unset: a warm machine's own cpu.duckdb is kept (a second call resumes it)
[ -n "${CPU_STORE:-}" ] && presampled "$CPU_STORE" /tmp/collect/cpu.duckdb
# a store there already (presampled, or a warm machine's) lists the networks: not imported again
reuse() { [ -e "/tmp/collect/$1.duckdb" ] && echo 1; }
gpu_reuse=$(reuse gpu) cpu_reuse=$(reuse cpu)
REUSE_TASKS=$gpu_reuse GRAPH=fp16 SIMT=${GPU_SIMT:-} BATCH=${GPU_BATCH:-} INPUT_SIZE=${GPU_INPUT_SIZE:-} timeout -s INT -k 60 "$limit" bench/offline/collect_there.sh \
    "$gpu" "$gpu_networks" "${GPU_CANDIDATES:-8}" /tmp/collect/gpu.duckdb "$half-$((cores - 1))" \
    > /tmp/collect/gpu.log 2>&1 &
gpu_pid=$!
REUSE_TASKS=$cpu_reuse GRAPH=${CPU_GRAPH:-blocked} SIMT= BATCH=${CPU_BATCH:-} INPUT_SIZE=${CPU_INPUT_SIZE:-} timeout -s INT -k 60 "$limit" bench/offline/collect_there.sh local-1t \
    "$cpu_networks" 16 /tmp/collect/cpu.duckdb "0-$((half - 1))" > /tmp/collect/cpu.log 2>&1
wait $gpu_pid
export PYTHONPATH=/tmp/tenforge-site:$PWD TENFORGE_HARDWARE=$PWD/bench/offline/hardware.toml
for kind in gpu cpu; do
    python3 -m tenforge.cli dataset export-seed --db /tmp/collect/$kind.duckdb --include-running \
        --out /tmp/collect/shards-$kind 2>&1 | tail -3
done
tail -30 /tmp/collect/gpu.log; tail -15 /tmp/collect/cpu.log
# a collect that measured nothing exports no shard folder: pack what is there
packed=()
for f in shards-gpu shards-cpu gpu.log cpu.log; do [ -e "/tmp/collect/$f" ] && packed+=("$f"); done
tar cf "$out/shards.tar" -C /tmp/collect "${packed[@]}"
ls -l "$out"
