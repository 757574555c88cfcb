#!/usr/bin/env bash
# Data-parallel SFT throughput, side by side in one run (dist/README.md):
#   A  1 rank  × 1 thread,  PER_RANK conversations per step
#   B  2 ranks × 1 thread,  2 × PER_RANK per step (PER_RANK per rank)       B/A: scaling, target ≥ 1.8
#   C  1 rank  × 2 threads, 2 × PER_RANK per step (B's global batch)         B/C: ranks against threads
#   D  two A runs at once, no MPI (their tokens/s summed)                       D/A: the machine's ceiling
#      for B/A — what two single-threaded processes get from two cores with no communication at all
# and B changed in one thing each, to tell where B loses against D (docs/notes/data-parallel-scaling.md):
#   E  no gradient all-reduce (bench-only GORSTAR_BENCH_NO_ALLREDUCE: each rank steps on its own
#      gradients); the ranks still meet once a step at the statistics' all-reduce
#   F  rank 1 starts each step's passes OFFSET_MS later (bench-only GORSTAR_BENCH_RANK_OFFSET_MS), so
#      the ranks run the same layer at different moments; the wait is outside the compute time
#   G  rank 1 runs its step's passes rotated (bench-only GORSTAR_BENCH_ROTATE_PASSES: its smaller
#      last pass first), an offset like F's at no idle cost; needs 2+ passes a step (PER_RANK=8)
#   O  the gradient all-reduce overlapped with the backward pass (GORSTAR_OVERLAP_ALLREDUCE=1)
#   U  no pinning at all: `mpirun --bind-to none` and GORSTAR_NO_PIN=1, like D's processes
# VARIANTS picks which of E F G O U run (all by default); A, B, C and D always run.
# Each configuration trains the same `small`-preset model on synthetic conversations for STEPS
# optimizer steps; tokens/s is `gorstar sft --json`'s (trained tokens over the steps' wall
# time, rank 0's clock for B). The three run in turn ROUNDS times and the medians are reported,
# since a shared machine's speed drifts. Then each configuration's step time by phase, from the
# "profile" of `gorstar sft --json` summed over its rounds (rank 0's clock; compute per rank):
# forward/backward (and its ms per computed token, which the round lines give too: a rank slowed
# by its neighbour or by another job on its core shows here), the slowest rank's lead over the mean
# (imbalance: what the faster ranks wait at the all-reduce), rank 0's wait for the slowest rank,
# the gradient all-reduce (O: its wait included), optimizer, the rest, and the Go collector's CPU time.
#
# usage: bench/dist_sft.sh [WORKDIR]    (needs go and mpirun; settings: PRESET (small), PER_RANK (2),
#        STEPS (3, at least 2), ROUNDS (3), SEED (1), OFFSET_MS (700), VARIANTS ("E F G O U"),
#        DTYPE (model.dtype: the default, auto, is bf16 on a CPU with AVX-512 BF16))
# The scaling figure of dist/README.md: VARIANTS= PER_RANK=8 STEPS=16 bench/dist_sft.sh (about 20
# minutes on 2 cores); the defaults are a quick check.
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
offset=${OFFSET_MS:-700}
variants=${VARIANTS-E F G O U}
dtype=()
[ -n "${DTYPE:-}" ] && dtype=(--set "model.dtype=$DTYPE")
export GOMP_SPINCOUNT=${GOMP_SPINCOUNT:-1000}
mpirun=(mpirun -np 2 --oversubscribe)
[ "$(id -u)" = 0 ] && mpirun+=(--allow-run-as-root)

"$bin" --seed "$seed" --threads 1 model init --preset "$preset" --tokenizer byte --out "$work/init" --force >/dev/null
# Every configuration runs STEPS steps of one epoch, nothing held out: the 2-rank and 2-thread
# ones on 2 × PER_RANK conversations a step, the 1-rank × 1-thread ones (A, D) on PER_RANK, from a
# file of half the size, so each pays its first step (allocation and first touch) once in as many
# steps.
"$bin" --seed 3 data synth --n $((2 * per * steps)) --sft --out "$work/sft.parquet" >/dev/null 2>&1
"$bin" --seed 3 data synth --n $((per * steps)) --sft --out "$work/sft-one.parquet" >/dev/null 2>&1

sft() { # name, batch, threads, launcher...
  local name=$1 batch=$2 threads=$3 data=$work/sft.parquet; shift 3
  [ "$batch" = "$per" ] && data=$work/sft-one.parquet
  rm -rf "$work/$name"
  "$@" "$bin" "${dtype[@]}" --seed "$seed" --threads "$threads" sft --model "$work/init" --data "$data" --out "$work/$name" \
    --epochs 1 --until-eval-loss 0 --eval-fraction 0 --batch-size "$batch" --save-every 0 --json \
    >"$work/$name.$r.json"
  # tokens/s over all steps, then over the steps after the first (which also allocates and
  # first-touches the activations and optimizer state)
  python3 - "$work/$name.$r.json" "$work/$name/metrics.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[2])][1:]
warm = sum(r["tokens"] for r in rows) / sum(r["tokens"] / r["tokens_per_s"] for r in rows)
print(f'{json.load(open(sys.argv[1]))["tokens_per_s"]},{warm}')
PY
}
mspt() { # a configuration's milliseconds per computed token in this round, per rank: a rank slowed
  # by something else on its core shows here
  python3 -c 'import json, sys; p = json.load(open(sys.argv[1]))["profile"]; print("/".join(f"{1e3 * c / n:.2f}" for c, n in zip(p["compute_s"], p["padded_tokens"])))' \
    "$work/$1.$r.json"
}
pair() { # two A runs at once; prints their summed rates
  sft d1 "$per" 1 >"$work/d1.out" &
  sft d2 "$per" 1 >"$work/d2.out"
  wait
  python3 -c 'import sys; a, b = (list(map(float, open(f).read().split(","))) for f in sys.argv[1:]); print(f"{a[0] + b[0]},{a[1] + b[1]}")' \
    "$work/d1.out" "$work/d2.out"
}
variant() { # E, F, G, O or U: B changed in one thing
  case $1 in
  E) sft e $((2 * per)) 1 "${mpirun[@]}" -x GORSTAR_BENCH_NO_ALLREDUCE=1 ;;
  F) sft f $((2 * per)) 1 "${mpirun[@]}" -x GORSTAR_BENCH_RANK_OFFSET_MS="$offset" ;;
  G) sft g $((2 * per)) 1 "${mpirun[@]}" -x GORSTAR_BENCH_ROTATE_PASSES=1 ;;
  O) sft o $((2 * per)) 1 "${mpirun[@]}" -x GORSTAR_OVERLAP_ALLREDUCE=1 ;;
  U) sft u $((2 * per)) 1 "${mpirun[@]}" --bind-to none -x GORSTAR_NO_PIN=1 ;;
  *) echo "bench/dist_sft.sh: VARIANTS: unknown variant $1 (E F G O U)" >&2; return 1 ;;
  esac
}
declare -a A B C D
declare -A X # variant -> its runs' rates, space-separated
for r in $(seq "$rounds"); do # r names each run's JSON
  A+=("$(sft a "$per" 1)")
  B+=("$(sft b $((2 * per)) 1 "${mpirun[@]}")")
  C+=("$(sft c $((2 * per)) 2)")
  D+=("$(pair)")
  line="round $r: A ${A[-1]}  B ${B[-1]}  C ${C[-1]}  D ${D[-1]}"
  for v in $variants; do
    x=$(variant "$v")
    X[$v]="${X[$v]:-} $x"
    line+="  $v $x"
  done
  echo "$line tokens/s (all steps,after the first); ms per token: A $(mspt a), B's ranks $(mspt b)" >&2
done
extra=()
for v in $variants; do extra+=("$v=${X[$v]}"); done
python3 - "${A[*]}" "${B[*]}" "${C[*]}" "${D[*]}" "$offset" "${extra[@]}" <<'PY'
import statistics, sys
rates = lambda s: [tuple(map(float, x.split(","))) for x in s.split()]
med = lambda rs, k: statistics.median(r[k] for r in rs)
runs = [rates(s) for s in sys.argv[1:5]]
(a, b, c, d), (aw, bw, cw, dw) = ([med(rs, k) for rs in runs] for k in (0, 1))
print("                          all steps           after the first step")
print(f"A 1 rank x 1 thread       {a:8.1f} tokens/s      {aw:8.1f} tokens/s")
print(f"B 2 ranks x 1 thread      {b:8.1f} tokens/s      {bw:8.1f} tokens/s   B/A {b / a:.2f} / {bw / aw:.2f}")
print(f"C 1 rank x 2 threads      {c:8.1f} tokens/s      {cw:8.1f} tokens/s   B/C {b / c:.2f} / {bw / cw:.2f}")
print(f"D 2 x A at once           {d:8.1f} tokens/s      {dw:8.1f} tokens/s   D/A {d / a:.2f} / {dw / aw:.2f}  B/D {b / d:.2f} / {bw / dw:.2f}")
labels = {"E": "B, no grad all-reduce", "F": f"B, rank 1 +{sys.argv[5]} ms", "G": "B, passes rotated", "O": "B, overlapped", "U": "B, unpinned"}
for arg in sys.argv[6:]:
    v, s = arg.split("=", 1)
    rs = rates(s)
    x, xw = med(rs, 0), med(rs, 1)
    print(f"{v} {labels[v]:22s} {x:8.1f} tokens/s      {xw:8.1f} tokens/s   {v}/A {x / a:.2f} / {xw / aw:.2f}"
          f"  {v}/B {x / b:.2f} / {xw / bw:.2f}  {v}/D {x / d:.2f} / {xw / dw:.2f}")
PY
python3 - "$work" "$rounds" $variants <<'PY'
import json, sys
work, rounds = sys.argv[1], int(sys.argv[2])
print("step time by phase, % of the steps' wall time (sums over the rounds):")
for name, label in [("a", "A"), ("b", "B"), ("c", "C")] + [(v.lower(), v) for v in sys.argv[3:]]:
    tot = {}
    for r in range(1, rounds + 1):
        p = json.load(open(f"{work}/{name}.{r}.json"))["profile"]
        for k, v in p.items():
            if isinstance(v, list):
                tot[k] = [x + y for x, y in zip(tot.get(k, [0] * len(v)), v)]
            elif isinstance(v, (int, float)):
                tot[k] = tot.get(k, 0) + v
    s = tot["step_s"]
    pct = lambda k: 100 * tot[k] / s
    comp = " ".join(f"{100 * c / s:.1f}" for c in tot["compute_s"])
    per_tok = " ".join(f"{1e3 * c / n:.2f}" for c, n in zip(tot["compute_s"], tot["padded_tokens"]))
    print(f"{label}: compute {comp} (per rank; ms per computed token {per_tok}; tokens"
          f" {' '.join(str(t) for t in tot['tokens'])}, computed {' '.join(str(t) for t in tot['padded_tokens'])})"
          f"  imbalance {pct('imbalance_s'):.1f}  wait {pct('wait_s'):.1f}  all-reduce {pct('allreduce_s'):.1f}"
          f" ({tot['allreduce_bytes'] / max(tot['steps'], 1) / 1e6:.0f} MB/step)  optimizer {pct('optimizer_s'):.1f}"
          f"  other {pct('other_s') + pct('stats_s'):.1f}  GC CPU {pct('gc_cpu_s'):.1f} ({tot['gc_cycles']} cycles)"
          f"  {s / tot['steps']:.2f} s/step")
PY
