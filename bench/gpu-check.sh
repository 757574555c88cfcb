#!/bin/sh
# gpu-check.sh — the GPU check of package gpu, on a machine with a GPU and no Go: it runs binaries
# built elsewhere and writes one JSON object (default gpu-check.json) within 8 minutes.
#
# Build them where Go is (cgo on; the binaries need the GPU machine's glibc to be at least the
# build machine's, see gpu/README.md):
#   go build -o gorstar . && go test -c -o gpu.test ./gpu
# Run from the repository root on the GPU machine:
#   bench/gpu-check.sh [OUT.json]
# Environment: DEVICE (default cuda:0; rocm:0 on AMD), PYTHON (default python3, with torch),
# QWEN3_DIR (a Qwen3 model directory for the log-probability check; default: random `small`
# weights), GORSTAR_CUDA_LIBS (extra library directories; pip's nvidia wheels are found anyway).
#
# Steps (each with its own time limit): gorstar doctor; every device op against the CPU backend and
# a tiny model's training step and decode steps on the device against the CPU (gpu.test);
# log-probabilities of one Qwen3 sequence, gorstar vs PyTorch on the GPU; training
# step and decode tokens/s at batch 1/8/64 for `small` and the Qwen3-0.6B shape, PyTorch eager
# bf16 and gorstar; `gorstar train --device $DEVICE` on the quickstart.
set -u
cd "$(dirname "$0")/.."
out=${1:-gpu-check.json}
DEVICE=${DEVICE:-cuda:0}
PYTHON=${PYTHON:-python3}
work=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check-XXXXXX")
trap 'rm -rf "$work"' EXIT
export GORSTAR_KERNEL_CACHE="$work/kernel-cache"
start=$(date +%s)

# step NAME SECONDS COMMAND...: stdout to $work/NAME.out, stderr to $work/NAME.err, status to $work/NAME.rc.
step() {
    name=$1 secs=$2
    shift 2
    echo "gpu-check: $name" >&2
    t0=$(date +%s)
    timeout "$secs" "$@" >"$work/$name.out" 2>"$work/$name.err"
    echo $? >"$work/$name.rc"
    echo $(($(date +%s) - t0)) >"$work/$name.s"
}

[ -x ./gorstar ] && [ -x ./gpu.test ] || { echo "gpu-check: build ./gorstar and ./gpu.test first (see the top of this script)" >&2; exit 1; }

step doctor 20 ./gorstar doctor --json
GORSTAR_GPU_DEVICE=$DEVICE GORSTAR_GPU_CHECK_OUT="$work/ops.jsonl" GORSTAR_GPU_CHECK_INFO="$work/device.json" \
    step ops 100 ./gpu.test -test.run '^TestDeviceMatchesCPU$' -test.v
GORSTAR_GPU_DEVICE=$DEVICE step model_ops 60 ./gpu.test -test.run '^TestModelOnDevice$' -test.v

# Log-probabilities: one sequence through gorstar (on the GPU, and on the CPU as the reference it
# must also match) and through PyTorch in float32 on the GPU.
model=${QWEN3_DIR:-}
if [ -z "$model" ]; then
    model="$work/small"
    step init 20 ./gorstar model init --preset small --out "$model" --device cpu
fi
$PYTHON -c 'import random; random.seed(1); print([random.randrange(256) for _ in range(128)])' >"$work/ids.json"
ids=$(cat "$work/ids.json")
step logprobs_gpu 30 ./gorstar model logprobs --json --model "$model" --ids "$ids" --device "$DEVICE"
step logprobs_cpu 30 ./gorstar model logprobs --json --model "$model" --ids "$ids" --device cpu
step logprobs_torch 40 $PYTHON bench/gpu_torch.py logprobs --model "$model" --ids "$work/ids.json"

# Throughput: PyTorch eager bf16 on the GPU (one process for every shape and batch); gorstar's
# side at batch 8 on `small`.
step torch_sweep 140 $PYTHON bench/gpu_torch.py sweep
step gorstar_train_small_8 20 ./gorstar model bench --json --preset small --train --batch 8 --seq 128 --device "$DEVICE"
step gorstar_decode_small_8 20 ./gorstar model bench --json --preset small --generate --batch 8 --device "$DEVICE"

step train 30 ./gorstar train --device "$DEVICE" --run-dir "$work/run" --quiet

$PYTHON - "$work" "$out" "$DEVICE" "$start" <<'PY'
import glob, json, os, sys, time
work, out, device, start = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])

def read(name):
    def f(ext):
        try:
            with open(os.path.join(work, name + ext)) as fh:
                return fh.read()
        except OSError:
            return None
    rc, so, se, secs = f(".rc"), f(".out"), f(".err"), f(".s")
    if rc is None:
        return None
    r = {"exit": int(rc), "seconds": int(secs or 0)}
    try:
        r["json"] = json.loads(so.strip().splitlines()[-1])
    except Exception:
        pass
    if int(rc) != 0:
        r["stderr_tail"] = (se or "").strip().splitlines()[-3:]
        if "json" not in r:
            r["stdout_tail"] = [l for l in (so or "").strip().splitlines() if l.strip()][-8:]
    return r

res = {"device": device, "seconds": int(time.time()) - start, "steps": {}}
for rc in sorted(glob.glob(os.path.join(work, "*.rc"))):
    name = os.path.basename(rc)[:-3]
    res["steps"][name] = read(name)
ops = []
if os.path.exists(os.path.join(work, "ops.jsonl")):
    with open(os.path.join(work, "ops.jsonl")) as fh:
        ops = [json.loads(l) for l in fh if l.strip()]
res["ops"] = ops
if os.path.exists(os.path.join(work, "device.json")):
    with open(os.path.join(work, "device.json")) as fh:
        res["device_backend"] = json.load(fh)
res["ops_ok"] = bool(ops) and all(o["ok"] for o in ops)
lp = {k: (res["steps"].get("logprobs_" + k) or {}).get("json", {}).get("logprobs") for k in ("gpu", "cpu", "torch")}
def maxdiff(a, b):
    return max(abs(x - y) for x, y in zip(a, b)) if a and b and len(a) == len(b) else None
res["logprobs_max_abs_diff"] = {"gorstar_gpu_vs_torch_gpu": maxdiff(lp["gpu"], lp["torch"]),
                                "gorstar_cpu_vs_torch_gpu": maxdiff(lp["cpu"], lp["torch"])}
rows = ((res["steps"].get("torch_sweep") or {}).get("json") or {}).get("rows", [])
tp = {}
for r in rows:
    row = tp.setdefault((r["shape"], r["batch"]), {"shape": r["shape"], "batch": r["batch"]})
    if r["mode"] == "train-bench":
        row["torch_train_tokens_per_s"] = r.get("tokens_per_s", r.get("error"))
    else:
        row["torch_decode_tokens_per_s"] = r.get("decode_tokens_per_s", r.get("error"))
for kind in ("train", "decode"):
    j = (res["steps"].get(f"gorstar_{kind}_small_8") or {}).get("json")
    if j and ("small", 8) in tp:
        tp[("small", 8)]["gorstar_" + kind] = j
res["throughput"] = list(tp.values())
tmp = out + ".tmp"
with open(tmp, "w") as fh:
    json.dump(res, fh, indent=1)
os.replace(tmp, out)
print(f"gpu-check: wrote {out} ({res['seconds']} s, ops ok: {res['ops_ok']})", file=sys.stderr)
PY
