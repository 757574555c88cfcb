#!/usr/bin/python3
"""An independent PyTorch implementation of the Qwen2/Qwen3 decoder, for checking and timing gorstar.

Written from the architecture, not from transformers (which is not needed): it reads a Hugging Face
model directory (config.json + model.safetensors, or shards with model.safetensors.index.json),
parsing the safetensors header itself.

Modes (each prints one JSON object on stdout):
  logprobs        --model DIR --ids '[1,2,3]'   log p(token i | tokens < i) for i >= 1, and the mean NLL
  train-bench     --model DIR | --preset tiny|small   forward + backward + AdamW tokens/s on random tokens
  generate-bench  --model DIR | --preset tiny|small   eager decoding with a preallocated KV cache, tokens/s
  init            --preset tiny|small --out DIR      a random-weight model directory (for tests)
  tensors         --file X.safetensors               every tensor's dtype, shape and float32 bit patterns

Fairness for the benchmarks: torch.set_num_threads(N) sets the OpenMP pool, but torch's float32
matmuls go to the system OpenBLAS, whose own pool ignores it, so the script also calls
openblas_set_num_threads(N) on every OpenBLAS library mapped into the process. Idle OpenMP threads
spin and starve OpenBLAS's threads unless OMP_WAIT_POLICY=PASSIVE, which libgomp reads when it is
loaded: the script re-executes itself with it set before importing torch.

Run it with Debian's /usr/bin/python3 (python3-torch). See bench/README.md.
"""

import os
import sys

if __name__ == "__main__" and os.environ.get("OMP_WAIT_POLICY", "").upper() != "PASSIVE":
    # libgomp reads the variable once, when torch loads it; re-exec so it is in place from the start.
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    os.execv(sys.executable, [sys.executable] + sys.argv)

import argparse
import ctypes
import json
import math
import mmap
import struct
import time

import torch
import torch.nn.functional as F

# --------------------------------------------------------------------------------------------
# safetensors
# --------------------------------------------------------------------------------------------

DTYPE_SIZES = {"F32": 4, "BF16": 2, "F16": 2, "I32": 4, "I64": 8}


def read_safetensors(path):
    """Returns ({name: tensor}, metadata). Float tensors come back as float32, integers as int64."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size < 8:
            raise ValueError(f"{path}: truncated: {size} bytes")
        buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)  # private, writable: frombuffer is happy
    (n,) = struct.unpack("<Q", buf[:8])
    if n > size - 8:
        raise ValueError(f"{path}: header length {n} exceeds the file")
    header = json.loads(bytes(buf[8 : 8 + n]).decode("utf-8"))
    base = 8 + n
    metadata = header.pop("__metadata__", None)
    tensors = {}
    for name, info in header.items():
        dtype, shape, (begin, end) = info["dtype"], info["shape"], info["data_offsets"]
        if dtype not in DTYPE_SIZES:
            raise ValueError(f"{path}: tensor {name!r}: unknown dtype {dtype!r}")
        count = math.prod(shape)
        if end - begin != count * DTYPE_SIZES[dtype] or base + end > size:
            raise ValueError(f"{path}: tensor {name!r}: bad data_offsets {begin, end}")
        if count == 0:
            tensors[name] = torch.zeros(shape, dtype=torch.int64 if dtype[0] == "I" else torch.float32)
            continue
        off = base + begin
        if dtype == "F32":
            t = torch.frombuffer(buf, dtype=torch.float32, count=count, offset=off).clone()
        elif dtype == "BF16":
            # bfloat16 is the top half of a float32: widen the bit pattern, exactly.
            raw = torch.frombuffer(buf, dtype=torch.int16, count=count, offset=off)
            t = (raw.to(torch.int32) << 16).view(torch.float32)
        elif dtype == "F16":
            t = torch.frombuffer(buf, dtype=torch.float16, count=count, offset=off).float()
        elif dtype == "I32":
            t = torch.frombuffer(buf, dtype=torch.int32, count=count, offset=off).to(torch.int64)
        else:
            t = torch.frombuffer(buf, dtype=torch.int64, count=count, offset=off).clone()
        tensors[name] = t.reshape(shape)
    return tensors, metadata


def read_model_tensors(model_dir):
    index = os.path.join(model_dir, "model.safetensors.index.json")
    if not os.path.exists(index):
        return read_safetensors(os.path.join(model_dir, "model.safetensors"))[0]
    with open(index) as f:
        weight_map = json.load(f)["weight_map"]
    tensors = {}
    for shard in sorted(set(weight_map.values())):
        part, _ = read_safetensors(os.path.join(model_dir, shard))
        tensors.update({k: v for k, v in part.items() if weight_map.get(k) == shard})
    return tensors


def float32_to_bf16_bits(t):
    """Round float32 to bfloat16 bit patterns (int16), to nearest, ties to even; NaN stays NaN."""
    bits = t.contiguous().view(torch.int32).to(torch.int64) & 0xFFFFFFFF
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    rounded = torch.where(torch.isnan(t), (bits >> 16) | 0x40, rounded)
    return rounded.to(torch.int16)  # wraps 0x8000..0xFFFF to negative int16: same bits


def write_safetensors(path, tensors, metadata=None, dtype="F32"):
    """Writes float tensors as F32, BF16 or F16 (integers as I64), header padded to 8 bytes."""
    entries, blobs, offset = {}, [], 0
    if metadata:
        entries["__metadata__"] = metadata
    for name, t in tensors.items():
        t = t.detach().contiguous()
        if t.is_floating_point():
            t = t.float()
            if dtype == "BF16":
                t, dt = float32_to_bf16_bits(t), "BF16"
            elif dtype == "F16":
                t, dt = t.half(), "F16"
            else:
                dt = "F32"
        else:
            t, dt = t.to(torch.int64), "I64"
        nbytes = t.numel() * DTYPE_SIZES[dt]
        blob = bytearray(nbytes)
        if nbytes:
            torch.frombuffer(blob, dtype=t.dtype).copy_(t.reshape(-1))
        entries[name] = {"dtype": dt, "shape": list(t.shape), "data_offsets": [offset, offset + nbytes]}
        blobs.append(blob)
        offset += nbytes
    header = json.dumps(entries, separators=(",", ":")).encode()
    header += b" " * (-(8 + len(header)) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(header)))
        f.write(header)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


# --------------------------------------------------------------------------------------------
# configuration
# --------------------------------------------------------------------------------------------

PRESETS = {
    # Must match gorstar's `model init` presets.
    "tiny": dict(vocab_size=384, hidden_size=128, num_hidden_layers=4, num_attention_heads=4,
                 num_key_value_heads=2, head_dim=32, intermediate_size=384, tie_word_embeddings=True,
                 rope_theta=1e4, rms_norm_eps=1e-6),
    "small": dict(vocab_size=32000, hidden_size=512, num_hidden_layers=8, num_attention_heads=8,
                  num_key_value_heads=4, head_dim=64, intermediate_size=1536, tie_word_embeddings=False,
                  rope_theta=1e6, rms_norm_eps=1e-6),
    # Qwen/Qwen3-0.6B's architecture (bench/qwen3-0.6b.sh; random weights, not a gorstar preset).
    "qwen3-0.6b": dict(vocab_size=151936, hidden_size=1024, num_hidden_layers=28, num_attention_heads=16,
                       num_key_value_heads=8, head_dim=128, intermediate_size=3072, tie_word_embeddings=True,
                       rope_theta=1e6, rms_norm_eps=1e-6),
}


def preset_config(name, arch="qwen3"):
    c = dict(PRESETS[name])
    c.update(model_type=arch, architectures=["Qwen3ForCausalLM" if arch == "qwen3" else "Qwen2ForCausalLM"],
             hidden_act="silu", max_position_embeddings=4096, torch_dtype="float32", attention_bias=False)
    return normalize_config(c)


def normalize_config(c):
    """Fills the defaults transformers uses for Qwen2Config/Qwen3Config and derives the layout."""
    c = dict(c)
    mt = c.get("model_type")
    if mt not in ("qwen2", "qwen3"):
        raise ValueError(f"config.json: model_type {mt!r} is not qwen2 or qwen3")
    c.setdefault("num_key_value_heads", c["num_attention_heads"])
    if c.get("head_dim") is None:
        # Qwen3Config declares head_dim=128; Qwen2 derives it from the hidden size.
        c["head_dim"] = 128 if mt == "qwen3" else c["hidden_size"] // c["num_attention_heads"]
    c.setdefault("rope_theta", 10000.0)
    c.setdefault("rms_norm_eps", 1e-6)
    c.setdefault("tie_word_embeddings", False)  # both Qwen configs default to untied
    c.setdefault("attention_bias", False)
    if c.get("rope_scaling"):
        raise ValueError(f"config.json: rope_scaling {c['rope_scaling']!r} is not supported (plain RoPE only)")
    if c.get("use_sliding_window"):
        raise ValueError("config.json: use_sliding_window is not supported (full attention only)")
    c["qk_norm"] = mt == "qwen3"
    c["qkv_bias"] = mt == "qwen2" or bool(c["attention_bias"])
    c["o_bias"] = mt == "qwen3" and bool(c["attention_bias"])
    if c["num_attention_heads"] % c["num_key_value_heads"]:
        raise ValueError("config.json: num_attention_heads must be a multiple of num_key_value_heads")
    return c


def load_config(model_dir):
    with open(os.path.join(model_dir, "config.json")) as f:
        return normalize_config(json.load(f))


def param_shapes(c):
    """Every weight's Hugging Face name and [out, in] shape."""
    H, D, KV, E, I, V = (c["num_attention_heads"], c["head_dim"], c["num_key_value_heads"],
                         c["hidden_size"], c["intermediate_size"], c["vocab_size"])
    shapes = {"model.embed_tokens.weight": [V, E]}
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        shapes[p + "input_layernorm.weight"] = [E]
        shapes[p + "self_attn.q_proj.weight"] = [H * D, E]
        shapes[p + "self_attn.k_proj.weight"] = [KV * D, E]
        shapes[p + "self_attn.v_proj.weight"] = [KV * D, E]
        shapes[p + "self_attn.o_proj.weight"] = [E, H * D]
        if c["qkv_bias"]:
            shapes[p + "self_attn.q_proj.bias"] = [H * D]
            shapes[p + "self_attn.k_proj.bias"] = [KV * D]
            shapes[p + "self_attn.v_proj.bias"] = [KV * D]
        if c["o_bias"]:
            shapes[p + "self_attn.o_proj.bias"] = [E]
        if c["qk_norm"]:
            shapes[p + "self_attn.q_norm.weight"] = [D]
            shapes[p + "self_attn.k_norm.weight"] = [D]
        shapes[p + "post_attention_layernorm.weight"] = [E]
        shapes[p + "mlp.gate_proj.weight"] = [I, E]
        shapes[p + "mlp.up_proj.weight"] = [I, E]
        shapes[p + "mlp.down_proj.weight"] = [E, I]
    shapes["model.norm.weight"] = [E]
    if not c["tie_word_embeddings"]:
        shapes["lm_head.weight"] = [V, E]
    return shapes


def random_params(c, seed=0, std=0.02, jitter_norms=False):
    """Normal(0, std) matrices and biases, RMSNorm weights 1 (or 1 + noise, so tests see them)."""
    g = torch.Generator().manual_seed(seed)
    params = {}
    for name, shape in param_shapes(c).items():
        if name.endswith("norm.weight") or name.endswith("layernorm.weight"):
            t = torch.ones(shape)
            if jitter_norms:
                t += 0.1 * torch.randn(shape, generator=g)
        else:
            t = std * torch.randn(shape, generator=g)
        params[name] = t
    return params


def load_params(model_dir, c):
    tensors = read_model_tensors(model_dir)
    params = {}
    for name, shape in param_shapes(c).items():
        if name not in tensors:
            raise ValueError(f"{model_dir}: tensor {name!r} not found")
        if list(tensors[name].shape) != shape:
            raise ValueError(f"{model_dir}: tensor {name!r} has shape {list(tensors[name].shape)}, want {shape}")
        params[name] = tensors[name].float()
    return params


# --------------------------------------------------------------------------------------------
# the model
# --------------------------------------------------------------------------------------------


def rms_norm(x, w, eps):
    # Statistics in float32 at least (float64 when the whole model runs in float64).
    xf = x.float() if x.dtype not in (torch.float32, torch.float64) else x
    y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    return w * y.to(x.dtype)


def rope_tables(c, positions, dtype):
    """cos and sin for the rotate-half convention: frequency theta^(-2j/D) for pair j, repeated twice."""
    D = c["head_dim"]
    inv_freq = 1.0 / (c["rope_theta"] ** (torch.arange(0, D, 2, dtype=torch.float64) / D))
    angles = positions.to(torch.float64)[:, None] * inv_freq[None, :]
    angles = torch.cat([angles, angles], dim=-1)  # [T, D]
    return angles.cos().to(dtype), angles.sin().to(dtype)


def apply_rope(x, cos, sin):
    """x: [B, heads, T, D]. Rotate-half: (x1, x2) -> (x1 cos - x2 sin, x2 cos + x1 sin)."""
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rotated * sin


class KVCache:
    """Preallocated per-layer keys and values: [B, KV heads, capacity, D]."""

    def __init__(self, c, batch, capacity, dtype):
        shape = (batch, c["num_key_value_heads"], capacity, c["head_dim"])
        self.k = [torch.zeros(shape, dtype=dtype) for _ in range(c["num_hidden_layers"])]
        self.v = [torch.zeros(shape, dtype=dtype) for _ in range(c["num_hidden_layers"])]


def attention(c, p, prefix, h, cos, sin, start, cache, layer):
    B, T, _ = h.shape
    H, KV, D = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
    q = F.linear(h, p[prefix + "q_proj.weight"], p.get(prefix + "q_proj.bias"))
    k = F.linear(h, p[prefix + "k_proj.weight"], p.get(prefix + "k_proj.bias"))
    v = F.linear(h, p[prefix + "v_proj.weight"], p.get(prefix + "v_proj.bias"))
    q = q.view(B, T, H, D)
    k = k.view(B, T, KV, D)
    v = v.view(B, T, KV, D)
    if c["qk_norm"]:  # Qwen3: RMSNorm over each head's D features, before RoPE
        q = rms_norm(q, p[prefix + "q_norm.weight"], c["rms_norm_eps"])
        k = rms_norm(k, p[prefix + "k_norm.weight"], c["rms_norm_eps"])
    q = apply_rope(q.transpose(1, 2), cos, sin)  # [B, H, T, D]
    k = apply_rope(k.transpose(1, 2), cos, sin)  # [B, KV, T, D]
    v = v.transpose(1, 2)
    if cache is not None:
        cache.k[layer][:, :, start : start + T] = k
        cache.v[layer][:, :, start : start + T] = v
        k = cache.k[layer][:, :, : start + T]
        v = cache.v[layer][:, :, : start + T]
    S = k.shape[2]
    # Grouped-query attention without copying K/V: query head h uses kv head h // (H / KV).
    G = H // KV
    qg = q.reshape(B, KV, G, T, D)
    qg = qg * (1.0 / math.sqrt(D))  # scale the queries, not the larger score matrix
    scores = torch.matmul(qg, k.unsqueeze(2).transpose(-1, -2))  # [B, KV, G, T, S]
    if T > 1:
        # Query i sits at position start + i and sees keys 0 .. start + i.
        qpos = torch.arange(start, start + T)[:, None]
        kpos = torch.arange(S)[None, :]
        scores = scores.masked_fill(kpos > qpos, float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    out = torch.matmul(probs, v.unsqueeze(2))  # [B, KV, G, T, D]
    out = out.reshape(B, H, T, D).transpose(1, 2).reshape(B, T, H * D)
    return F.linear(out, p[prefix + "o_proj.weight"], p.get(prefix + "o_proj.bias"))


def hidden_states(c, p, ids, start=0, cache=None):
    """Runs the decoder over ids [B, T] placed at positions start.. and returns the final-normed states."""
    x = F.embedding(ids, p["model.embed_tokens.weight"])
    T = ids.shape[1]
    cos, sin = rope_tables(c, torch.arange(start, start + T), x.dtype)
    eps = c["rms_norm_eps"]
    for i in range(c["num_hidden_layers"]):
        pre = f"model.layers.{i}."
        h = rms_norm(x, p[pre + "input_layernorm.weight"], eps)
        x = x + attention(c, p, pre + "self_attn.", h, cos, sin, start, cache, i)
        h = rms_norm(x, p[pre + "post_attention_layernorm.weight"], eps)
        gate = F.linear(h, p[pre + "mlp.gate_proj.weight"])
        up = F.linear(h, p[pre + "mlp.up_proj.weight"])
        x = x + F.linear(F.silu(gate) * up, p[pre + "mlp.down_proj.weight"])
    return rms_norm(x, p["model.norm.weight"], eps)


def lm_head(c, p, h):
    w = p["model.embed_tokens.weight"] if c["tie_word_embeddings"] else p["lm_head.weight"]
    return F.linear(h, w)


def forward(c, p, ids, start=0, cache=None):
    """Logits [B, T, vocab]."""
    return lm_head(c, p, hidden_states(c, p, ids, start, cache))


def token_logprobs(c, p, ids):
    """log p(ids[i] | ids[:i]) for i >= 1, for one sequence."""
    logits = forward(c, p, torch.tensor([ids]))[0]
    logp = torch.log_softmax(logits[:-1], dim=-1)
    return logp.gather(-1, torch.tensor(ids[1:])[:, None])[:, 0]


# --------------------------------------------------------------------------------------------
# threads
# --------------------------------------------------------------------------------------------


def set_threads(n):
    """Pins torch's OpenMP pool and every mapped OpenBLAS to n threads; returns the libraries set."""
    torch.set_num_threads(n)
    torch.ones(8, 8) @ torch.ones(8, 8)  # make sure the BLAS library is loaded
    done = []
    with open("/proc/self/maps") as f:
        libs = sorted({line.split()[-1] for line in f if "blas" in line.lower() and "/" in line})
    for lib in libs:
        try:
            handle = ctypes.CDLL(lib)
            fn = handle.openblas_set_num_threads
        except (OSError, AttributeError):
            continue
        fn.argtypes = [ctypes.c_int]
        fn(n)
        done.append(lib)
    return done


def thread_report(n, libs):
    return {"threads": n, "torch_threads": torch.get_num_threads(), "openblas_set": libs,
            "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"), "torch": torch.__version__}


# --------------------------------------------------------------------------------------------
# modes
# --------------------------------------------------------------------------------------------


def model_from_args(args):
    if args.model:
        c = load_config(args.model)
        return c, load_params(args.model, c), args.model
    if not args.preset:
        raise SystemExit("give --model DIR or --preset tiny|small")
    c = preset_config(args.preset, args.arch)
    return c, random_params(c, args.seed), "preset:" + args.preset


def cmd_logprobs(args):
    ids = args.ids
    if os.path.exists(ids):
        with open(ids) as f:
            ids = f.read()
    ids = json.loads(ids)
    if not isinstance(ids, list) or len(ids) < 2 or not all(isinstance(i, int) for i in ids):
        raise SystemExit("--ids: want a JSON list of at least two token ids")
    c, p, _ = model_from_args(args)
    if max(ids) >= c["vocab_size"] or min(ids) < 0:
        raise SystemExit(f"--ids: ids must lie in [0, {c['vocab_size']})")
    dtype = torch.float64 if args.dtype == "float64" else torch.float32
    p = {k: v.to(dtype) for k, v in p.items()}
    with torch.no_grad():
        lp = token_logprobs(c, p, ids)
    out = {"ids": ids, "logprobs": [float(x) for x in lp], "loss": float(-lp.mean()), "dtype": args.dtype}
    print(json.dumps(out))


def cmd_train_bench(args):
    libs = set_threads(args.threads)
    torch.manual_seed(args.seed)
    c, p, source = model_from_args(args)
    params = {k: v.clone().requires_grad_(True) for k, v in p.items()}
    opt = torch.optim.AdamW(params.values(), lr=args.lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
    g = torch.Generator().manual_seed(args.seed)
    V, B, L = c["vocab_size"], args.batch, args.seq
    batches = [torch.randint(0, V, (B, L + 1), generator=g) for _ in range(min(args.warmup + args.steps, 4))]

    def step(i):
        tokens = batches[i % len(batches)]
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.autocast_bf16):
            logits = forward(c, params, tokens[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, V).float(), tokens[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if args.clip > 0:
            torch.nn.utils.clip_grad_norm_(params.values(), args.clip)
        opt.step()
        return float(loss)

    for i in range(args.warmup):
        step(i)
    times, losses = [], []
    for i in range(args.steps):
        t0 = time.perf_counter()
        losses.append(step(args.warmup + i))
        times.append(time.perf_counter() - t0)
    total = sum(times)
    out = {"mode": "train-bench", "model": source, "batch": B, "seq": L, "steps": args.steps,
           "warmup": args.warmup, "clip": args.clip,
           "tokens_per_s": B * L * args.steps / total, "step_s": total / args.steps,
           "step_s_min": min(times), "loss_first": losses[0], "loss_last": losses[-1],
           "params": sum(t.numel() for t in params.values())}
    out.update(thread_report(args.threads, libs))
    print(json.dumps(out))


def sample(logits, temperature, g):
    if temperature <= 0:
        return logits.argmax(-1)
    probs = torch.softmax(logits.float() / temperature, dim=-1)
    return torch.multinomial(probs, 1, generator=g)[:, 0]


def cmd_generate_bench(args):
    libs = set_threads(args.threads)
    c, p, source = model_from_args(args)
    g = torch.Generator().manual_seed(args.seed)
    B, P, N = args.batch, args.prompt_len, args.new_tokens
    prompts = torch.randint(0, c["vocab_size"], (B, P), generator=g)

    def run():
        cache = KVCache(c, B, P + N, torch.float32)
        t0 = time.perf_counter()
        h = hidden_states(c, p, prompts, 0, cache)
        tok = sample(lm_head(c, p, h[:, -1]), args.temperature, g)  # logits of the last prompt token only
        t1 = time.perf_counter()
        out = [tok]
        for i in range(N - 1):
            h = hidden_states(c, p, tok[:, None], P + i, cache)
            tok = sample(lm_head(c, p, h[:, -1]), args.temperature, g)
            out.append(tok)
        t2 = time.perf_counter()
        return t1 - t0, t2 - t1, torch.stack(out, 1)

    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.autocast_bf16):
        for _ in range(args.warmup):
            run()
        prefill, decode, tokens = run()
    out = {"mode": "generate-bench", "model": source, "batch": B, "prompt_len": P, "new_tokens": N,
           "temperature": args.temperature,
           "tokens_per_s": B * N / (prefill + decode),
           "decode_tokens_per_s": B * (N - 1) / decode if N > 1 else None,
           "prefill_tokens_per_s": B * P / prefill, "prefill_s": prefill, "decode_s": decode,
           "first_tokens": tokens[0, :8].tolist()}
    out.update(thread_report(args.threads, libs))
    print(json.dumps(out))


def cmd_init(args):
    c = preset_config(args.preset, args.arch)
    if args.attention_bias:
        c["attention_bias"] = True
        c = normalize_config(c)
    p = random_params(c, args.seed, jitter_norms=args.jitter_norms)
    if c["qkv_bias"] or c["o_bias"]:
        g = torch.Generator().manual_seed(args.seed + 1)
        for k in p:
            if k.endswith(".bias"):
                p[k] = 0.1 * torch.randn(p[k].shape, generator=g)
    os.makedirs(args.out, exist_ok=True)
    saved = {k: v for k, v in c.items() if k not in ("qk_norm", "qkv_bias", "o_bias")}
    saved["torch_dtype"] = {"F32": "float32", "BF16": "bfloat16", "F16": "float16"}[args.dtype]
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(saved, f, indent=2, sort_keys=True)
    write_safetensors(os.path.join(args.out, "model.safetensors"), p, {"format": "pt"}, args.dtype)
    print(json.dumps({"out": args.out, "params": sum(t.numel() for t in p.values()), "dtype": args.dtype}))


def cmd_tensors(args):
    tensors, metadata = read_safetensors(args.file)
    out = {}
    for name, t in sorted(tensors.items()):
        entry = {"shape": list(t.shape)}
        if t.is_floating_point():
            entry["f32bits"] = [x & 0xFFFFFFFF for x in t.float().reshape(-1).view(torch.int32).tolist()]
        else:
            entry["ints"] = t.reshape(-1).tolist()
        out[name] = entry
    print(json.dumps({"metadata": metadata, "tensors": out}))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="mode", required=True)

    def model_flags(sp):
        sp.add_argument("--model", help="Hugging Face model directory")
        sp.add_argument("--preset", choices=sorted(PRESETS), help="random weights of a gorstar preset")
        sp.add_argument("--arch", choices=["qwen3", "qwen2"], default="qwen3", help="with --preset")
        sp.add_argument("--seed", type=int, default=0)

    sp = sub.add_parser("logprobs", help="per-token log-probabilities of one sequence")
    model_flags(sp)
    sp.add_argument("--ids", required=True, help="JSON list of token ids, or a file holding one")
    sp.add_argument("--dtype", choices=["float64", "float32"], default="float64")
    sp.set_defaults(fn=cmd_logprobs)

    sp = sub.add_parser("train-bench", help="training tokens/s: forward + backward + AdamW")
    model_flags(sp)
    sp.add_argument("--batch", type=int, default=16)
    sp.add_argument("--seq", type=int, default=256)
    sp.add_argument("--threads", type=int, default=os.cpu_count())
    sp.add_argument("--steps", type=int, default=5)
    sp.add_argument("--warmup", type=int, default=1)
    sp.add_argument("--lr", type=float, default=1e-4)
    sp.add_argument("--clip", type=float, default=1.0, help="global grad-norm clip (0: off)")
    sp.add_argument("--autocast-bf16", action="store_true", help="CPU mixed precision: torch.autocast bf16")
    sp.set_defaults(fn=cmd_train_bench)

    sp = sub.add_parser("generate-bench", help="decoding tokens/s with a KV cache")
    model_flags(sp)
    sp.add_argument("--batch", type=int, default=1)
    sp.add_argument("--prompt-len", type=int, default=64)
    sp.add_argument("--new-tokens", type=int, default=64)
    sp.add_argument("--threads", type=int, default=os.cpu_count())
    sp.add_argument("--temperature", type=float, default=0.0, help="0: greedy")
    sp.add_argument("--warmup", type=int, default=1, help="untimed full runs first")
    sp.add_argument("--autocast-bf16", action="store_true", help="CPU mixed precision: torch.autocast bf16")
    sp.set_defaults(fn=cmd_generate_bench)

    sp = sub.add_parser("init", help="write a random-weight model directory")
    sp.add_argument("--preset", choices=sorted(PRESETS), default="tiny")
    sp.add_argument("--arch", choices=["qwen3", "qwen2"], default="qwen3")
    sp.add_argument("--attention-bias", action="store_true")
    sp.add_argument("--jitter-norms", action="store_true", help="norm weights 1 + noise instead of 1")
    sp.add_argument("--dtype", choices=["F32", "BF16", "F16"], default="F32")
    sp.add_argument("--seed", type=int, default=0)
    sp.add_argument("--out", required=True)
    sp.set_defaults(fn=cmd_init)

    sp = sub.add_parser("tensors", help="dump a safetensors file as JSON (float32 bit patterns)")
    sp.add_argument("--file", required=True)
    sp.set_defaults(fn=cmd_tensors)

    args = ap.parse_args(argv)
    args.fn(args)


if __name__ == "__main__":
    try:
        main()
    except (ValueError, OSError, KeyError) as e:
        print(f"qwen3_torch: {e}", file=sys.stderr)
        sys.exit(1)
