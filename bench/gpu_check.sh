#!/usr/bin/env bash
# The GPU figures of bench/judge_bench.py --gpu on a lent machine, with that machine's own
# python3 (its image holds torch and transformers; nothing can be installed there). The
# package runs from the checkout through a symlinked `pairscope` namespace. Logs go to $OUT.
#   bash bench/gpu_check.sh            (on the device machine)
set -uo pipefail
cd "$(dirname "$0")/.."
ns=$(mktemp -d)
mkdir -p "$ns/pairscope"
for d in app models widgets resources; do ln -s "$PWD/$d" "$ns/pairscope/$d"; done
export PYTHONPATH="$ns:$PWD/tests" PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
out=${OUT:-/tmp}
work=${WORK:-/tmp/judge-bench}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>&1 | tee "$out/gpu.txt"
python3 -c "import sys, torch, transformers; print(sys.version.split()[0], torch.__version__, transformers.__version__)" \
    2>&1 | tee -a "$out/gpu.txt"
# smoke run: builds and saves the 7B-shaped model once (reused below), checks the whole path
timeout "${SMOKE_S:-200}" python3 bench/judge_bench.py --gpu --items 16 --tokens 16 --seq-items 2 --batch 8 \
    --workdir "$work" 2>&1 | grep -v "it/s]" | tee "$out/smoke.txt"
timeout "${FULL_S:-320}" python3 bench/judge_bench.py --gpu --workdir "$work" 2>&1 | grep -v "it/s]" | tee "$out/full.txt"
