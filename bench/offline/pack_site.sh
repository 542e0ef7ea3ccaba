#!/usr/bin/env bash
# Pack what tenforge needs at run time as one Python site folder, for a machine that cannot reach
# a package index (a lent GPU machine, an air-gapped lab box): the wheels for ITS Python version,
# unpacked, tar + xz, split into parts that fit a transfer limit. torch and numpy are left out:
# such machines bring their own (and their CUDA build of torch).
#
#   bench/offline/pack_site.sh [PYTHON_VERSION=3.12] [OUT=data/offline] [PART_MB=56]
#
# Then copy OUT/site.* over and run bench/offline/collect_there.sh there. Measured 2026-11-23:
# 111 MB in two parts (TVM's compiler library is most of it), packed in ~3 min on 2 vCPUs.
set -euo pipefail
cd "$(dirname "$0")/../.."
pyver=${1:-3.12}
out=${2:-data/offline}
part_mb=${3:-56}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
platforms=()
for p in manylinux_2_28 manylinux_2_27 manylinux_2_26 manylinux_2_24 manylinux_2_17 manylinux2014 \
         manylinux_2_5 manylinux1; do platforms+=(--platform "${p}_x86_64"); done
# the project's pins, less what the machine brings
grep -v -E '^(torch|nvidia|triton|numpy)' constraints.txt > "$work/constraints.txt"
python3 -m pip download -q --only-binary=:all: --python-version "$pyver" --implementation cp \
    "${platforms[@]}" -c "$work/constraints.txt" -d "$work/wheels" \
    "apache-tvm==0.27.0.post1" "apache-tvm-ffi==0.1.14.post0" "duckdb==1.5.6" "prefect==3.8.8" \
    "fastapi<0.151" "sqlalchemy[asyncio]>=2.0,<2.1" "optuna==5.0.0" tornado cloudpickle psutil
rm -f "$work"/wheels/numpy-*.whl
mkdir -p "$work/tenforge-site"
for wheel in "$work"/wheels/*.whl; do unzip -qo "$wheel" -d "$work/tenforge-site"; done
mkdir -p "$out"
rm -f "$out"/site.*
tar cf - -C "$work" tenforge-site | xz -T0 -6 | split -b "${part_mb}000000" - "$out/site."
ls -l "$out"/site.*
