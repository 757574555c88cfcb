#!/usr/bin/env bash
# Data-parallel SFT throughput, side by side in one run (dist/README.md):
#   A  1 rank  × 1 thread,  PER_RANK conversations per step
#   B  2 ranks × 1 thread,  2 × PER_RANK per step (PER_RANK per rank)       B/A: scaling, target ≥ 1.8
#   C  1 rank  × 2 threads, 2 × PER_RANK per step (B's global batch)         B/C: ranks against threads
# Each configuration trains the same `small`-preset model on the same synthetic conversations for
# STEPS optimizer steps; tokens/s is `gorstar sft --json`'s (trained tokens over the steps' wall
# time, rank 0's clock for B). The three run in turn ROUNDS times and the medians are reported,
# since a shared machine's speed drifts.
#
# usage: bench/dist_sft.sh [WORKDIR]    (needs go and mpirun; settings: PRESET (small), PER_RANK (2),
#        STEPS (3), ROUNDS (3), SEED (1); 14 min on the shared 2-core machine)
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:-$(mktemp -d)}
mkdir -p "$work"
bin="$work/gorstar"
go build -o "$bin" .
preset=${PRESET:-small}
per=${PER_RANK:-2}
steps=${STEPS:-3}
rounds=${ROUNDS:-3}
seed=${SEED:-1}
export GOMP_SPINCOUNT=${GOMP_SPINCOUNT:-1000}
mpirun=(mpirun -np 2 --oversubscribe)
[ "$(id -u)" = 0 ] && mpirun+=(--allow-run-as-root)

"$bin" --seed "$seed" --threads 1 model init --preset "$preset" --tokenizer byte --out "$work/init" --force >/dev/null
# Enough conversations for STEPS steps of the largest batch, one epoch, nothing held out.
"$bin" --seed 3 data synth --n $((2 * per * steps)) --sft --out "$work/sft.parquet" >/dev/null 2>&1

sft() { # name, batch, threads, launcher...
  local name=$1 batch=$2 threads=$3; shift 3
  rm -rf "$work/$name"
  "$@" "$bin" --seed "$seed" --threads "$threads" sft --model "$work/init" --data "$work/sft.parquet" --out "$work/$name" \
    --epochs 1 --until-eval-loss 0 --eval-fraction 0 --batch-size "$batch" --save-every 0 --json \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["tokens_per_s"])'
}
declare -a A B C
for r in $(seq "$rounds"); do
  A+=("$(sft a "$per" 1)")
  B+=("$(sft b $((2 * per)) 1 "${mpirun[@]}")")
  C+=("$(sft c $((2 * per)) 2)")
  echo "round $r: A ${A[-1]}  B ${B[-1]}  C ${C[-1]} tokens/s" >&2
done
python3 - "${A[*]}" "${B[*]}" "${C[*]}" <<'PY'
import statistics, sys
a, b, c = (statistics.median(map(float, s.split())) for s in sys.argv[1:4])
print(f"A 1 rank x 1 thread   {a:8.1f} tokens/s")
print(f"B 2 ranks x 1 thread  {b:8.1f} tokens/s   B/A {b / a:.2f}")
print(f"C 1 rank x 2 threads  {c:8.1f} tokens/s   B/C {b / c:.2f}")
PY
