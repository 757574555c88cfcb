#!/usr/bin/env bash
# Benchmark: import N JSONL problems (default 1M, ~550 bytes each) into a Parquet problems table
# with the built gorstar binary, and report rows/s and peak RSS. Streaming means the peak RSS does
# not grow with N: the run at N/10 is reported beside it to show that.
#
# usage: bench/data_import.sh [N] [WORKDIR]     (needs python3 and GNU time at /usr/bin/time)
set -euo pipefail
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
