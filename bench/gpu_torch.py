#!/usr/bin/python3
"""PyTorch eager bf16 on a GPU, the baseline of bench/gpu-check.sh: training step and decode tokens/s,
and per-token log-probabilities, with bench/qwen3_torch.py's decoder (imported, run on the GPU).

Modes (one JSON object on stdout):
  train-bench     --shape small|qwen3-0.6b --batch B --seq L    forward + backward + AdamW, bf16 weights
  generate-bench  --shape small|qwen3-0.6b --batch B            greedy decode with a KV cache, bf16
  logprobs        --model DIR --ids FILE                        log p(token i | tokens < i), float32
  sweep                                                         train-bench (seq 128) and generate-bench
                                                                for both shapes at batch 1, 8 and 64
"""

import argparse
import contextlib
import json
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qwen3_torch as q  # noqa: E402

SHAPES = {
    "small": q.PRESETS["small"],
    # Qwen3-0.6B's config.json.
    "qwen3-0.6b": dict(vocab_size=151936, hidden_size=1024, num_hidden_layers=28, num_attention_heads=16,
                       num_key_value_heads=8, head_dim=128, intermediate_size=3072, tie_word_embeddings=True,
                       rope_theta=1e6, rms_norm_eps=1e-6),
}


def config(shape):
    c = dict(SHAPES[shape])
    c.update(model_type="qwen3", architectures=["Qwen3ForCausalLM"], hidden_act="silu",
             max_position_embeddings=40960, torch_dtype="bfloat16", attention_bias=False)
    return q.normalize_config(c)


# GPU_TORCH_DEVICE=cpu runs the same code on the CPU (a check of this script without a GPU).
DEVICE = os.environ.get("GPU_TORCH_DEVICE", "cuda")


def sync():
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def on_cpu():
    """Tensors created inside are on the CPU whatever the default device (torch >= 2.0)."""
    return torch.device("cpu") if hasattr(torch, "set_default_device") else contextlib.nullcontext()


def params(c, seed, dtype):
    with on_cpu():  # qwen3_torch draws them with a CPU generator
        p = q.random_params(c, seed)
    return {k: v.to(DEVICE, dtype) for k, v in p.items()}


def train_bench(args):
    c = config(args.shape)
    p = {k: v.requires_grad_(True) for k, v in params(c, args.seed, torch.bfloat16).items()}
    opt = torch.optim.AdamW(p.values(), lr=1e-4, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
    V, B, L = c["vocab_size"], args.batch, args.seq
    tokens = torch.randint(0, V, (B, L + 1))

    def step():
        logits = q.forward(c, p, tokens[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, V).float(), tokens[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(p.values(), 1.0)
        opt.step()
        return loss

    step()
    sync()
    t0 = time.perf_counter()
    for _ in range(args.steps):
        loss = step()
    sync()
    dt = (time.perf_counter() - t0) / args.steps
    return {"mode": "train-bench", "shape": args.shape, "batch": B, "seq": L, "step_s": dt,
            "tokens_per_s": B * L / dt, "loss": float(loss)}


def generate_bench(args):
    c = config(args.shape)
    p = params(c, args.seed, torch.bfloat16)
    B, P, N = args.batch, args.prompt_len, args.new_tokens
    prompts = torch.randint(0, c["vocab_size"], (B, P))

    def run():
        cache = q.KVCache(c, B, P + N, torch.bfloat16)
        h = q.hidden_states(c, p, prompts, 0, cache)
        tok = q.lm_head(c, p, h[:, -1]).argmax(-1)
        sync()
        t1 = time.perf_counter()
        for i in range(N - 1):
            h = q.hidden_states(c, p, tok[:, None], P + i, cache)
            tok = q.lm_head(c, p, h[:, -1]).argmax(-1)
        sync()
        return time.perf_counter() - t1

    with torch.no_grad():
        run()
        decode = run()
    return {"mode": "generate-bench", "shape": args.shape, "batch": B, "prompt_len": P, "new_tokens": N,
            "decode_tokens_per_s": B * (N - 1) / decode}


def logprobs(args):
    with open(args.ids) as f:
        ids = json.load(f)
    c = q.load_config(args.model)
    with on_cpu():
        p = {k: v.to(DEVICE, torch.float32) for k, v in q.load_params(args.model, c).items()}
    with torch.no_grad():
        lp = q.token_logprobs(c, p, ids)
    return {"mode": "logprobs", "ids": ids, "logprobs": [float(x) for x in lp.cpu()], "dtype": "float32"}


def sweep(args):
    rows = []
    for shape in ("small", "qwen3-0.6b"):
        for b in (1, 8, 64):
            for fn, kw in ((train_bench, dict(seq=128, steps=3)), (generate_bench, dict(prompt_len=64, new_tokens=32))):
                a = argparse.Namespace(**{**vars(args), "shape": shape, "batch": b, **kw})
                t0 = time.perf_counter()
                try:
                    r = fn(a)
                except torch.cuda.OutOfMemoryError if hasattr(torch.cuda, "OutOfMemoryError") else RuntimeError as e:
                    r = {"mode": fn.__name__.replace("_", "-"), "shape": shape, "batch": b, "error": str(e).splitlines()[0]}
                r["seconds"] = time.perf_counter() - t0
                rows.append(r)
                torch.cuda.empty_cache() if DEVICE == "cuda" else None
    return {"mode": "sweep", "rows": rows}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mode", choices=["train-bench", "generate-bench", "logprobs", "sweep"])
    ap.add_argument("--shape", choices=sorted(SHAPES), default="small")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--prompt-len", type=int, default=64)
    ap.add_argument("--new-tokens", type=int, default=64)
    ap.add_argument("--model")
    ap.add_argument("--ids")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if DEVICE == "cuda" and not torch.cuda.is_available():
        raise SystemExit("gpu_torch.py: torch sees no GPU (torch.cuda.is_available() is False)")
    if DEVICE != "cpu":
        torch.set_default_device(DEVICE)  # every tensor qwen3_torch creates lands on the GPU (torch >= 2.0)
    modes = {"train-bench": train_bench, "generate-bench": generate_bench, "logprobs": logprobs, "sweep": sweep}
    out = modes[args.mode](args)
    out["device"] = torch.cuda.get_device_name(0) if DEVICE == "cuda" else DEVICE
    out["torch"] = torch.__version__
    print(json.dumps(out))


if __name__ == "__main__":
    main()
