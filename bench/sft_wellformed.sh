#!/usr/bin/env bash
# SFT format check: does the `tiny` model learn the tool-call format from `data synth --sft`?
# Runs the recipe of sft/README.md ("Well-formed samples after SFT") end to end — held-out
# problems, SFT conversations that never ask them, a tiny init with the copy warm-up, SFT with
# checkpoints — then samples every checkpoint at temperature 1.0 on the held-out prompts
# (`gorstar rollout`) and prints well_formed by SFT step with the failure modes of the rest
# (bench/wellformed_modes.py).
#
# usage: bench/sft_wellformed.sh [WORKDIR]     (needs go and python3; ~33 min on one core)
# Settings by environment: SFT_N (conversations, 5600), SFT_LR (0.003), SFT_SCHEDULE (cosine),
# SFT_EPOCHS (1), SAVE_EVERY (100), EVAL_N (held-out problems, 100), SAMPLES (4), SEED (of init,
# SFT and sampling, 1), THREADS (1). The data seeds are the quickstart's (held out 2, SFT 3).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
work=${1:-$(mktemp -d)}
mkdir -p "$work"
bin="$work/gorstar"
go build -o "$bin" .

sft_n=${SFT_N:-5600}
lr=${SFT_LR:-0.003}
schedule=${SFT_SCHEDULE:-cosine}
epochs=${SFT_EPOCHS:-1}
save_every=${SAVE_EVERY:-100}
eval_n=${EVAL_N:-100}
samples=${SAMPLES:-4}
threads=${THREADS:-1}
seed=${SEED:-1}
export GORSTAR_THREADS=$threads GOMP_SPINCOUNT=${GOMP_SPINCOUNT:-1000}
g() { "$bin" --quiet "$@"; }           # data synth takes no --threads
t() { "$bin" --threads "$threads" --quiet "$@"; }

# The quickstart's held-out table and SFT conversations (its seeds), the latter larger.
[ -s "$work/eval.parquet" ] || g --seed 2 data synth --n "$eval_n" --out "$work/eval.parquet"
[ -s "$work/sft.parquet" ] || g --seed 3 data synth --n "$sft_n" --sft --out "$work/sft.parquet" --exclude "$work/eval.parquet"
[ -s "$work/init/config.json" ] || t --seed "$seed" model init --preset tiny --copy-steps 2000 --copy-loss 0.1 --out "$work/init"
if [ ! -s "$work/sft/config.json" ]; then
  start=$(date +%s)
  t --seed "$seed" sft --model "$work/init" --data "$work/sft.parquet" --out "$work/sft" \
    --lr "$lr" --schedule "$schedule" --epochs "$epochs" --save-every "$save_every" --keep-checkpoints 0
  echo "sft: $(($(date +%s) - start)) s" >&2
fi

printf '%-6s %-18s %s\n' step well_formed "failure modes (T=1.0, $eval_n held-out prompts x $samples samples)"
for ckpt in "$work"/sft/checkpoints/step-*; do
  step=$((10#${ckpt##*step-}))
  [ -s "$work/wf-$step.json" ] || t --seed "$seed" rollout --model "$ckpt" --data "$work/eval.parquet" --samples "$samples" \
    --temperature 1.0 --out "$work/wf-$step.parquet" --jsonl "$work/wf-$step.jsonl" --json >"$work/wf-$step.json"
  python3 - "$step" "$work/wf-$step.json" "$(python3 "$repo/bench/wellformed_modes.py" "$work/wf-$step.jsonl" --json)" <<'PY'
import json, sys
step, summary, modes = sys.argv[1], json.load(open(sys.argv[2])), json.loads(sys.argv[3])
n, wf = summary["trajectories"], summary["well_formed"]
if modes["well_formed"] != wf:  # the script's rule has drifted from rollout.Trajectory.WellFormed
    sys.exit(f"step {step}: gorstar counts {wf} well formed, wellformed_modes.py {modes['well_formed']}")
names = ("call_garbled", "call_unclosed", "runaway", "no_call", "answer_unboxed", "error")
print(f"{step:<6} {f'{wf}/{n} ({100 * wf / n:.1f}%)':<18}", "  ".join(f"{m} {modes[m]}" for m in names),
      f" first_call_failed {modes['first_call_failed']} (planted {modes['first_call_planted']})")
PY
done
echo "files kept in $work" >&2
