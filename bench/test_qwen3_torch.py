#!/usr/bin/python3
"""Checks of qwen3_torch.py: the model against a hand-written pure-Python forward pass (plain lists
and the math module), the KV cache against a full pass, the safetensors reader and writer, and the
command line. Run: /usr/bin/python3 bench/test_qwen3_torch.py  (about ten seconds)."""

import json
import math
import os
import struct
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402

import qwen3_torch as q  # noqa: E402

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "qwen3_torch.py")


def micro_config(arch="qwen3", tied=False, bias=False):
    c = dict(model_type=arch, vocab_size=7, hidden_size=8, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, head_dim=4, intermediate_size=6, tie_word_embeddings=tied,
             rope_theta=100.0, rms_norm_eps=1e-5, attention_bias=bias)
    return q.normalize_config(c)


def micro_params(c, seed):
    p = q.random_params(c, seed, std=0.5, jitter_norms=True)
    g = torch.Generator().manual_seed(seed + 7)
    for k in p:
        if k.endswith(".bias"):
            p[k] = 0.3 * torch.randn(p[k].shape, generator=g)
    return {k: v.double() for k, v in p.items()}


def manual_logits(c, p, ids):
    """The decoder written out element by element, position by position, from the architecture."""
    W = {k: v.tolist() for k, v in p.items()}
    H, KV, D, eps = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"], c["rms_norm_eps"]

    def matvec(name, x, bias=None):
        b = W.get(bias) if bias else None
        return [sum(w * xi for w, xi in zip(row, x)) + (b[i] if b else 0.0) for i, row in enumerate(W[name])]

    def rms(x, w):
        s = math.sqrt(sum(v * v for v in x) / len(x) + eps)
        return [wi * v / s for wi, v in zip(w, x)]

    def rope(v, pos):
        half = D // 2
        out = [0.0] * D
        for j in range(half):
            ang = pos * c["rope_theta"] ** (-2.0 * j / D)
            out[j] = v[j] * math.cos(ang) - v[j + half] * math.sin(ang)
            out[j + half] = v[j + half] * math.cos(ang) + v[j] * math.sin(ang)
        return out

    xs = [list(W["model.embed_tokens.weight"][t]) for t in ids]
    for layer in range(c["num_hidden_layers"]):
        pre = f"model.layers.{layer}."
        a = pre + "self_attn."
        qs, ks, vs = [], [], []
        for pos, x in enumerate(xs):
            h = rms(x, W[pre + "input_layernorm.weight"])
            qv = matvec(a + "q_proj.weight", h, a + "q_proj.bias")
            kv = matvec(a + "k_proj.weight", h, a + "k_proj.bias")
            vv = matvec(a + "v_proj.weight", h, a + "v_proj.bias")
            qh = [qv[i * D:(i + 1) * D] for i in range(H)]
            kh = [kv[i * D:(i + 1) * D] for i in range(KV)]
            if c["qk_norm"]:
                qh = [rms(v, W[a + "q_norm.weight"]) for v in qh]
                kh = [rms(v, W[a + "k_norm.weight"]) for v in kh]
            qs.append([rope(v, pos) for v in qh])
            ks.append([rope(v, pos) for v in kh])
            vs.append([vv[i * D:(i + 1) * D] for i in range(KV)])
        new = []
        for i, x in enumerate(xs):
            heads = []
            for hd in range(H):
                g = hd // (H // KV)
                scores = [sum(qa * kb for qa, kb in zip(qs[i][hd], ks[j][g])) / math.sqrt(D) for j in range(i + 1)]
                m = max(scores)
                e = [math.exp(s - m) for s in scores]
                z = sum(e)
                heads += [sum(e[j] / z * vs[j][g][d] for j in range(i + 1)) for d in range(D)]
            o = matvec(a + "o_proj.weight", heads, a + "o_proj.bias")
            x = [xv + ov for xv, ov in zip(x, o)]
            h = rms(x, W[pre + "post_attention_layernorm.weight"])
            gate = matvec(pre + "mlp.gate_proj.weight", h)
            up = matvec(pre + "mlp.up_proj.weight", h)
            act = [gv / (1 + math.exp(-gv)) * uv for gv, uv in zip(gate, up)]
            down = matvec(pre + "mlp.down_proj.weight", act)
            new.append([xv + dv for xv, dv in zip(x, down)])
        xs = new
    head = "model.embed_tokens.weight" if c["tie_word_embeddings"] else "lm_head.weight"
    return [matvec(head, rms(x, W["model.norm.weight"])) for x in xs]


class ModelTest(unittest.TestCase):
    def check_against_manual(self, c, seed):
        p = micro_params(c, seed)
        ids = [3, 1, 6, 0, 2]
        want = torch.tensor(manual_logits(c, p, ids), dtype=torch.float64)
        got = q.forward(c, p, torch.tensor([ids]))[0]
        self.assertLess(float((got - want).abs().max()), 1e-12)
        return got

    def test_qwen3_matches_manual(self):
        self.check_against_manual(micro_config("qwen3"), 1)

    def test_qwen3_tied_with_bias_matches_manual(self):
        c = micro_config("qwen3", tied=True, bias=True)
        self.assertTrue(c["o_bias"] and c["qkv_bias"])
        self.check_against_manual(c, 2)

    def test_qwen2_matches_manual(self):
        c = micro_config("qwen2")
        self.assertTrue(c["qkv_bias"])
        self.assertFalse(c["qk_norm"] or c["o_bias"])
        self.assertIn("model.layers.0.self_attn.q_proj.bias", q.param_shapes(c))
        self.assertNotIn("model.layers.0.self_attn.q_norm.weight", q.param_shapes(c))
        self.check_against_manual(c, 3)

    def test_qk_norm_changes_the_output(self):
        c3, c2 = micro_config("qwen3"), micro_config("qwen2")
        p = micro_params(c3, 4)
        p2 = {k: v for k, v in p.items() if k in q.param_shapes(c2)}
        for k, shape in q.param_shapes(c2).items():
            p2.setdefault(k, torch.zeros(shape, dtype=torch.float64))  # zero biases
        ids = torch.tensor([[1, 2, 3]])
        self.assertGreater(float((q.forward(c3, p, ids) - q.forward(c2, p2, ids)).abs().max()), 1e-3)

    def test_logprobs_are_a_distribution(self):
        c = micro_config()
        p = micro_params(c, 5)
        ids = [1, 4, 4, 2, 6, 0]
        lp = q.token_logprobs(c, p, ids)
        self.assertEqual(len(lp), len(ids) - 1)
        self.assertTrue(bool((lp <= 0).all()))
        logits = q.forward(c, p, torch.tensor([ids]))[0]
        total = torch.logsumexp(torch.log_softmax(logits, -1), -1)
        self.assertLess(float(total.abs().max()), 1e-12)

    def test_causal(self):
        c = micro_config()
        p = micro_params(c, 6)
        a = q.forward(c, p, torch.tensor([[1, 2, 3, 4]]))[0]
        b = q.forward(c, p, torch.tensor([[1, 2, 3, 5]]))[0]
        self.assertLess(float((a[:3] - b[:3]).abs().max()), 1e-14)
        self.assertGreater(float((a[3] - b[3]).abs().max()), 1e-6)

    def test_kv_cache_matches_full_pass(self):
        c = micro_config()
        p = micro_params(c, 7)
        ids = torch.tensor([[1, 2, 3, 4, 5, 6], [6, 5, 4, 3, 2, 1]])
        full = q.forward(c, p, ids)
        cache = q.KVCache(c, 2, 8, torch.float64)
        parts = [q.forward(c, p, ids[:, :3], 0, cache)]
        for t in range(3, 6):
            parts.append(q.forward(c, p, ids[:, t:t + 1], t, cache))
        self.assertLess(float((torch.cat(parts, 1) - full).abs().max()), 1e-12)

    def test_training_lowers_the_loss(self):
        c = micro_config()
        params = {k: v.float().requires_grad_(True) for k, v in micro_params(c, 8).items()}
        opt = torch.optim.AdamW(params.values(), lr=1e-2)
        tokens = torch.tensor([[1, 2, 3, 4, 5, 6, 0, 1, 2, 3]])
        losses = []
        for _ in range(20):
            logits = q.forward(c, params, tokens[:, :-1])
            loss = torch.nn.functional.cross_entropy(logits.reshape(-1, 7), tokens[:, 1:].reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(float(loss))
        self.assertLess(losses[-1], 0.5 * losses[0])


class SafetensorsTest(unittest.TestCase):
    def test_round_trip_and_rounding(self):
        vals = torch.tensor([0.0, -0.5, 1.0, 3.14159, 1e-8, 2.0 ** -24, 65504.0, float("inf"), float("-inf")])
        ties = torch.tensor([1.00390625, 1.01171875])  # halfway between bf16 neighbours: round to even
        with tempfile.TemporaryDirectory() as d:
            for dtype in ["F32", "BF16", "F16"]:
                path = os.path.join(d, dtype + ".safetensors")
                q.write_safetensors(path, {"v": vals, "t": ties, "i": torch.tensor([1, -2])}, {"format": "pt"}, dtype)
                with open(path, "rb") as f:
                    (n,) = struct.unpack("<Q", f.read(8))
                self.assertEqual((8 + n) % 8, 0)
                got, meta = q.read_safetensors(path)
                self.assertEqual(meta, {"format": "pt"})
                self.assertEqual(got["i"].tolist(), [1, -2])
                want = {"F32": vals, "BF16": vals.bfloat16().float(), "F16": vals.half().float()}[dtype]
                self.assertTrue(torch.equal(got["v"], want), (dtype, got["v"], want))
                if dtype == "BF16":
                    self.assertEqual(got["t"].tolist(), [1.0, 1.015625])

    def test_nan_survives_bf16(self):
        bits = q.float32_to_bf16_bits(torch.tensor([float("nan"), 3.4e38]))
        widened = (bits.to(torch.int32) << 16).view(torch.float32)
        self.assertTrue(math.isnan(widened[0]))
        self.assertTrue(math.isinf(widened[1]))


class CommandLineTest(unittest.TestCase):
    def run_script(self, *args):
        env = dict(os.environ)
        env.pop("OMP_WAIT_POLICY", None)  # the script must set it itself
        r = subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, env=env, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout)

    def test_init_logprobs_and_benches(self):
        with tempfile.TemporaryDirectory() as d:
            model = os.path.join(d, "m")
            self.run_script("init", "--preset", "tiny", "--out", model, "--dtype", "BF16")
            out = self.run_script("logprobs", "--model", model, "--ids", "[5, 9, 300, 2]")
            self.assertEqual(len(out["logprobs"]), 3)
            self.assertAlmostEqual(out["loss"], -sum(out["logprobs"]) / 3, places=12)
            self.assertTrue(all(lp <= 0 for lp in out["logprobs"]))
            tb = self.run_script("train-bench", "--model", model, "--batch", "2", "--seq", "16",
                                 "--threads", "1", "--steps", "2", "--warmup", "1")
            self.assertGreater(tb["tokens_per_s"], 0)
            self.assertEqual(tb["omp_wait_policy"], "PASSIVE")
            self.assertEqual(tb["torch_threads"], 1)
            gb = self.run_script("generate-bench", "--preset", "tiny", "--batch", "2", "--prompt-len", "4",
                                 "--new-tokens", "3", "--threads", "1", "--temperature", "0.8")
            self.assertGreater(gb["tokens_per_s"], 0)

    def test_greedy_generation_matches_full_pass(self):
        # The bench's first tokens under greedy decoding equal argmax decoding by full forward passes.
        gb = self.run_script("generate-bench", "--preset", "tiny", "--batch", "1", "--prompt-len", "5",
                             "--new-tokens", "4", "--threads", "1", "--seed", "3")
        c = q.preset_config("tiny")
        p = q.random_params(c, 3)
        g = torch.Generator().manual_seed(3)
        ids = torch.randint(0, c["vocab_size"], (1, 5), generator=g)
        with torch.no_grad():
            for _ in range(4):
                nxt = q.forward(c, p, ids)[0, -1].argmax()
                ids = torch.cat([ids, nxt.view(1, 1)], 1)
        self.assertEqual(gb["first_tokens"], ids[0, 5:].tolist())


if __name__ == "__main__":
    unittest.main()
