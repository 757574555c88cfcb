#!/usr/bin/env bash
# Runs gorstar's benches, each side by side with its baseline in the same run, and prints one
# docs/measurements.md row per (metric, machine):
#
#   | metric | machine | date | commit | command | gorstar | baseline (same run) | ratio | target |
#
# Usage, from the repository root:  bench/measurements.sh MACHINE [METRIC...]
#   MACHINE  the machine's id in docs/measurements.md's table of machines (add a row for a new one)
#   METRIC   any of: train-small sft-small generate-tiny generate-small exec-print exec-sympy rollout
#            (all when none is given; the whole set takes 10-20 minutes on 2 cores)
# Paste the rows over the current rows of the same metric and machine; move the replaced rows to
# the record below them. PyTorch rows need /usr/bin/python3 with torch (apt-get install python3-torch).
set -euo pipefail
cd "$(dirname "$0")/.."

machine=${1:?usage: bench/measurements.sh MACHINE [METRIC...]}
shift
metrics=("$@")
[ ${#metrics[@]} -gt 0 ] || metrics=(train-small sft-small generate-tiny generate-small exec-print exec-sympy rollout)

export GOMP_SPINCOUNT="${GOMP_SPINCOUNT:-1000}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/gorstar" .
date=$(date -u +%F)
commit=$(git rev-parse --short HEAD)
[ -z "$(git status --porcelain --untracked-files=no)" ] || commit="$commit+dirty"

# run COMMAND: runs gorstar with COMMAND's words, its JSON summary to out.json.
run() {
  # shellcheck disable=SC2086 # a list of words on purpose
  "$tmp/gorstar" $1 >"$tmp/out.json"
}

# row METRIC COMMAND GORSTAR BASELINE RATIO UNIT TARGET: prints the row of the last run; GORSTAR,
# BASELINE and RATIO name its JSON fields (a.b for a nested one).
row() {
  local metric=$1 args=$2
  shift 2
  python3 - "$tmp/out.json" "$metric" "$machine" "$date" "$commit" "gorstar $args" "$@" <<'EOF'
import json, sys
path, metric, machine, date, commit, command, fig, base, ratio, unit, target = sys.argv[1:12]
with open(path) as f:
    doc = json.load(f)
def get(path):
    v = doc
    for k in path.split("."):
        v = v[k]
    return v
def num(v):
    return f"{v:,.0f}" if v >= 100 else f"{v:.3g}"
g, b, r = get(fig), get(base), get(ratio)
print(f"| {metric} | {machine} | {date} | {commit} | `{command}` | {num(g)} {unit} | {num(b)} {unit} | {r:.2f} | {target} |")
EOF
}

for m in "${metrics[@]}"; do
  case $m in
  train-small)
    run "model bench --preset small --train --threads 2 --repeat 3 --compare-torch --json"
    row "training tokens/s, small 8×512 vs PyTorch" "model bench --preset small --train --threads 2 --repeat 3 --compare-torch --json" \
      tokens_per_s torch_tokens_per_s ratio tokens/s "≥ 1.5×"
    row "training step GFLOP/s vs the machine's SGEMM, small" "model bench --preset small --train --threads 2 --repeat 3 --compare-torch --json" \
      step_gflops sgemm_gflops sgemm_fraction_paired GFLOP/s "≥ 0.9" ;;
  sft-small)
    run "sft bench --preset small --threads 2 --json"
    row "SFT tokens/s, small, mixed lengths vs the plain step" "sft bench --preset small --threads 2 --json" \
      sft_tokens_per_s train_tokens_per_s ratio tokens/s "≥ 0.85" ;;
  generate-tiny | generate-small)
    p=${m#generate-}
    run "model bench --generate --preset $p --batch 64 --threads 2 --repeat 3 --compare-torch --json"
    row "generation tokens/s, $p, batch 64 vs PyTorch" "model bench --generate --preset $p --batch 64 --threads 2 --repeat 3 --compare-torch --json" \
      tokens_per_s torch_tokens_per_s ratio tokens/s "≥ 2×" ;;
  exec-print | exec-sympy)
    w=${m#exec-}
    target="550/s"; [ "$w" = sympy ] && target="150/s"
    run "exec bench --workload $w --concurrency 64 --duration 8s --json"
    row "tool calls/s, $w, 64 in flight vs a fresh python3 per call" "exec bench --workload $w --concurrency 64 --duration 8s --json" \
      calls_per_s baseline.calls_per_s speedup calls/s "$target" ;;
  rollout)
    run "rollout bench --preset tiny --tool-sleep 200ms --threads 2 --repeat 3 --json"
    row "rollouts, 200 ms tools: naive s / overlapped s" "rollout bench --preset tiny --tool-sleep 200ms --threads 2 --repeat 3 --json" \
      overlapped_s naive_s speedup s "≥ 1.5×"
    row "rollouts: decode tokens/s vs the engine alone" "rollout bench --preset tiny --tool-sleep 200ms --threads 2 --repeat 3 --json" \
      decode_tokens_per_s engine_only_tokens_per_s decode_share tokens/s "≥ 0.70" ;;
  *)
    echo "bench/measurements.sh: unknown metric $m" >&2
    exit 1 ;;
  esac
done
