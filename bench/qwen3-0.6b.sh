#!/bin/sh
# A Qwen3-0.6B-shaped model (hidden 1024, 28 layers, 16 heads / 8 KV, head_dim 128, MLP 3072,
# vocab 151936, tied) with random bf16 weights: gorstar against PyTorch's CPU autocast bf16 on the
# same directory, generation at batch 1, 8 and 64 and SFT steps of BATCH x SEQ tokens (gorstar
# with every layer recomputed), each run alone under /usr/bin/time for its peak RSS.
#
#   go build -o gorstar . && sh bench/qwen3-0.6b.sh            # full: 8 x 512, 3 steps, 64 new tokens
#   STEPS=1 NEW_TOKENS=8 TORCH_TRAIN=0 sh bench/qwen3-0.6b.sh   # a shorter check
#   TORCH_BATCH=1 sh bench/qwen3-0.6b.sh                        # a 24 GB machine
#
# Settings (environment): GORSTAR (./gorstar), PYTHON (/usr/bin/python3, with torch), THREADS
# (all cores), DIR (the model directory, made once), BATCH (8), SEQ (512), STEPS (3),
# PROMPT_LEN (64), NEW_TOKENS (64), GEN_BATCHES ("1 8 64"), RECOMPUTE (28), TORCH (1: run the
# PyTorch side), TORCH_TRAIN (1), TORCH_BATCH (BATCH; PyTorch keeps every activation: 16 GiB
# at 1 x 512 (measured), an estimated 28 GB at 8 x 512 — on a 24 GB machine use TORCH_BATCH=1, and gorstar runs
# that batch too for the same-shape ratio).
set -eu
here=$(dirname "$0")
GORSTAR=${GORSTAR:-./gorstar}
PYTHON=${PYTHON:-/usr/bin/python3}
THREADS=${THREADS:-$(nproc)}
DIR=${DIR:-${TMPDIR:-/tmp}/qwen3-0.6b-bf16}
BATCH=${BATCH:-8} SEQ=${SEQ:-512} STEPS=${STEPS:-3} RECOMPUTE=${RECOMPUTE:-28}
PROMPT_LEN=${PROMPT_LEN:-64} NEW_TOKENS=${NEW_TOKENS:-64} GEN_BATCHES=${GEN_BATCHES:-"1 8 64"}
TORCH=${TORCH:-1} TORCH_TRAIN=${TORCH_TRAIN:-1} TORCH_BATCH=${TORCH_BATCH:-$BATCH}
torch="$PYTHON $here/qwen3_torch.py"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ ! -f "$DIR/model.safetensors" ]; then
	echo "writing $DIR (random bf16 weights)"
	$torch init --preset qwen3-0.6b --dtype BF16 --jitter-norms --out "$DIR" >/dev/null
fi
ls -l "$DIR/model.safetensors" | awk '{printf "model.safetensors: %.2f GiB\n", $5 / 2^30}'
"$GORSTAR" model info "$DIR" --dtype bf16 --batch "$BATCH" --seq "$SEQ" --recompute "$RECOMPUTE"

# run NAME CMD...: runs CMD under /usr/bin/time, prints NAME, its tokens/s and peak RSS.
run() {
	name=$1
	shift
	if ! /usr/bin/time -f '%M' -o "$tmp/rss" "$@" >"$tmp/out" 2>"$tmp/err"; then
		echo "$name: failed:" >&2
		tail -5 "$tmp/err" >&2
		return 0
	fi
	"$PYTHON" - "$name" "$tmp/out" "$tmp/rss" <<'PY'
import json, sys
name, out, rss = sys.argv[1:]
lines = [l for l in open(out).read().splitlines() if l.startswith("{")]
r = json.loads(lines[-1])
tps = r["generate"][0]["tokens_per_s"] if "generate" in r else r["tokens_per_s"]
kb = int(open(rss).read().split()[-1])
print(f"{name:34s} {tps:9.1f} tokens/s   peak RSS {kb / 2**20:6.2f} GiB")
PY
}

for b in $GEN_BATCHES; do
	run "generate batch $b gorstar bf16" "$GORSTAR" model bench --threads "$THREADS" --generate --model "$DIR" \
		--dtype bf16 --batch "$b" --prompt-len "$PROMPT_LEN" --new-tokens "$NEW_TOKENS" --json
	[ "$TORCH" = 1 ] && run "generate batch $b torch autocast" $torch generate-bench --model "$DIR" --autocast-bf16 \
		--threads "$THREADS" --batch "$b" --prompt-len "$PROMPT_LEN" --new-tokens "$NEW_TOKENS"
done
run "sft $BATCH x $SEQ gorstar bf16 rc=$RECOMPUTE" "$GORSTAR" model bench --threads "$THREADS" --train --model "$DIR" \
	--dtype bf16 --batch "$BATCH" --seq "$SEQ" --steps "$STEPS" --recompute "$RECOMPUTE" --json
if [ "$TORCH" = 1 ] && [ "$TORCH_TRAIN" = 1 ]; then
	[ "$TORCH_BATCH" != "$BATCH" ] && run "sft $TORCH_BATCH x $SEQ gorstar bf16 rc=$RECOMPUTE" "$GORSTAR" model bench \
		--threads "$THREADS" --train --model "$DIR" --dtype bf16 --batch "$TORCH_BATCH" --seq "$SEQ" --steps "$STEPS" \
		--recompute "$RECOMPUTE" --json
	run "sft $TORCH_BATCH x $SEQ torch autocast" $torch train-bench --model "$DIR" \
		--autocast-bf16 --threads "$THREADS" --batch "$TORCH_BATCH" --seq "$SEQ" --steps "$STEPS" --warmup 1
fi
exit 0
