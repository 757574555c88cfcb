#!/usr/bin/env bash
# Benchmark: import N JSONL problems (default 1M, ~550 bytes each) into a Parquet problems table
# with the built gorstar binary, and report rows/s and peak RSS. Streaming means the peak RSS does
# not grow with N: the run at N/10 is reported beside it to show that.
#
# usage: bench/data_import.sh [N] [WORKDIR]     (needs python3 and GNU time at /usr/bin/time)
#
# With --public FILE…: import each public evaluation file as published (no flags), grade every
# row's own reference solution (MATH, MATH-500, Minerva: the worked solution; GSM8K: the rationale
# with its "#### X" boxed) against the imported answer, and print per file the rows, the share
# graded correct and the misses (graded.jsonl in WORKDIR, which $WORK sets, holds them all).
#   bench/data_import.sh --public math500/test.jsonl math/test.jsonl gsm8k/test.jsonl minerva_math/test.jsonl
set -euo pipefail
if [ "${1:-}" = "--public" ]; then
  shift
  files=()
  for f in "$@"; do files+=("$(realpath "$f")"); done
  set -- "${files[@]}"
  cd "$(dirname "$0")/.."
  work=${WORK:-$(mktemp -d)}
  mkdir -p "$work"
  bin="$work/gorstar"
  go build -o "$bin" .
  for f in "$@"; do
    name=$(basename "$(dirname "$f")")_$(basename "$f" | tr '.' '_')
    "$bin" data import --in "$f" --out "$work/$name.parquet" --quiet >/dev/null
    "$bin" data export --in "$work/$name.parquet" --out "$work/$name.jsonl" --quiet >/dev/null
    python3 bench/reference_check.py "$work/$name.jsonl" "$work/$name.pairs.jsonl" 2>/dev/null
    "$bin" reward grade --in "$work/$name.pairs.jsonl" --out "$work/$name.graded.jsonl" --quiet
    python3 - "$f" "$work/$name.jsonl" "$work/$name.graded.jsonl" <<'PY'
import json, sys
path, imported, graded = sys.argv[1:]
rows = [json.loads(l) for l in open(imported)]
g = [json.loads(l) for l in open(graded)]
ok = sum(r["correct"] for r in g)
print(json.dumps({"file": path, "source": rows[0]["source"], "rows": len(rows), "with_solution": len(g),
                  "correct": ok, "share": round(ok / max(len(g), 1), 4)}))
for r in g:
    if not r["correct"]:
        print("  miss", r["id"], json.dumps(r["answer"]), "extracted", json.dumps(r["extracted"]), r["reason"])
PY
  done
  echo "files kept in $work" >&2
  exit 0
fi
cd "$(dirname "$0")/.."
n=${1:-1000000}
work=${2:-$(mktemp -d)}
mkdir -p "$work"
bin="$work/gorstar"
go build -o "$bin" .

run() { # rows → prints "rows seconds peak_kb input_bytes output_bytes cpu_seconds"
  local rows=$1 in="$work/problems-$1.jsonl"
  [ -s "$in" ] || python3 bench/gen_problems.py "$rows" "$in"
  /usr/bin/time -f "%e %M %U %S" -o "$work/time.txt" "$bin" data import --in "$in" --out "$work/out-$rows.parquet" --json --quiet >"$work/out.json"
  read -r secs kb user sys <"$work/time.txt"
  echo "$rows $secs $kb $(stat -c %s "$in") $(stat -c %s "$work/out-$rows.parquet") $(python3 -c "print($user + $sys)")"
}

small=$((n / 10))
read -r sr ss sk sin sout scpu < <(run "$small")
read -r r s k in out cpu < <(run "$n")
python3 - "$r" "$s" "$k" "$in" "$out" "$sr" "$ss" "$sk" "$cpu" <<'PY'
import json, sys
r, s, k, fin, fout, sr, ss, sk, cpu = sys.argv[1:]
print(json.dumps({
    "rows": int(r), "seconds": float(s), "rows_per_s": round(int(r) / float(s)),
    "cpu_seconds": float(cpu), "rows_per_cpu_s": round(int(r) / float(cpu)),
    "peak_rss_mb": round(int(k) / 1024, 1), "input_mb": round(int(fin) / 2**20, 1),
    "output_mb": round(int(fout) / 2**20, 1),
    "small_rows": int(sr), "small_rows_per_s": round(int(sr) / float(ss)),
    "small_peak_rss_mb": round(int(sk) / 1024, 1),
}))
PY
echo "files kept in $work" >&2
