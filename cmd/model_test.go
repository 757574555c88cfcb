package cmd

import (
	"encoding/json"
	"math"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gorstar/internal/testenv"
	"gorstar/model"
)

func TestModelInitInfoLogprobs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tiny")
	r := runCLI(t, "model", "init", "--out", dir, "--preset", "tiny", "--seed", "3", "--json")
	if r.Code != 0 {
		t.Fatalf("%+v", r)
	}
	info := decodeJSON(t, runCLI(t, "model", "info", "--json", dir))
	if info["model_type"] != "qwen3" || info["vocab_size"] != 384.0 || info["num_hidden_layers"] != 4.0 {
		t.Fatalf("info: %v", info)
	}
	r = runCLI(t, "model", "logprobs", "--model", dir, "--text", "2+2=4<|im_end|>", "--json", "--threads", "1")
	if r.Code != 0 {
		t.Fatalf("%+v", r)
	}
	out := decodeJSON(t, r)
	ids, lps := out["ids"].([]any), out["logprobs"].([]any)
	if len(ids) != 6 || len(lps) != 5 || ids[5] != 258.0 {
		t.Fatalf("logprobs: %v", out)
	}
	// The same ids give the same numbers at any thread count (up to float reassociation).
	idsJSON, _ := json.Marshal(ids)
	again := decodeJSON(t, runCLI(t, "model", "logprobs", "--model", dir, "--ids", string(idsJSON), "--json", "--threads", "2"))
	for i := range lps {
		if d := math.Abs(lps[i].(float64) - again["logprobs"].([]any)[i].(float64)); d > 1e-5 {
			t.Fatalf("logprob %d: %v with 1 thread, %v with 2", i, lps[i], again["logprobs"].([]any)[i])
		}
	}
}

// gorstar's logprobs agree with an independent PyTorch implementation of Qwen3/Qwen2
// (bench/qwen3_torch.py, float64) to 1e-4.
func TestModelLogprobsMatchPyTorch(t *testing.T) {
	testenv.Short(t, "compares with PyTorch")
	testenv.Torch(t)
	tmp := t.TempDir()
	tiny := filepath.Join(tmp, "tiny")
	if r := runCLI(t, "model", "init", "--out", tiny, "--preset", "tiny", "--seed", "5"); r.Code != 0 {
		t.Fatalf("%+v", r)
	}
	// A Qwen2 model (q/k/v biases, no q/k norm, untied) and a Qwen3 one with attention_bias (q/k/v
	// and o_proj biases, q/k norm), with non-trivial biases and norms.
	qwen2 := filepath.Join(tmp, "qwen2")
	qwen3Bias := filepath.Join(tmp, "qwen3-bias")
	for _, v := range []struct{ typ, dir string }{{"qwen2", qwen2}, {"qwen3", qwen3Bias}} {
		c := model.Config{ModelType: v.typ, VocabSize: 300, HiddenSize: 64, IntermediateSize: 96, NumHiddenLayers: 2,
			NumAttentionHeads: 4, NumKeyValueHeads: 2, HeadDim: 16, RopeTheta: 1e6, RMSNormEps: 1e-6, InitializerRange: 0.1,
			AttentionBias: true}
		m, err := model.New(c, 9)
		if err != nil {
			t.Fatal(err)
		}
		host := make([]float32, m.Params.Size)
		m.Params.All.CopyTo(host)
		for _, tn := range m.Params.Tensors {
			if !tn.Decay {
				for i := tn.Offset; i < tn.Offset+tn.Size; i++ {
					host[i] += float32(math.Sin(float64(i))) * 0.2
				}
			}
		}
		m.Params.All.CopyFrom(host)
		if err := m.Save(v.dir); err != nil {
			t.Fatal(err)
		}
		m.Close()
	}

	ids := make([]int, 40)
	for i := range ids {
		ids[i] = (i*37 + 11) % 256
	}
	idsJSON, _ := json.Marshal(ids)
	for _, dir := range []string{tiny, qwen2, qwen3Bias} {
		// fp32 against PyTorch's float64 (the default, auto, is bf16 on a CPU with AVX-512 BF16;
		// model's TestBF16NearFP32 bounds bf16 against fp32).
		r := runCLI(t, "--set", "model.dtype=fp32", "model", "logprobs", "--model", dir, "--ids", string(idsJSON), "--json")
		if r.Code != 0 {
			t.Fatalf("%+v", r)
		}
		got := decodeJSON(t, r)
		out, err := osexec.Command("/usr/bin/python3", filepath.Join("..", "bench", "qwen3_torch.py"), "logprobs",
			"--model", dir, "--ids", string(idsJSON)).Output()
		if err != nil {
			t.Fatalf("qwen3_torch.py logprobs: %v", err)
		}
		var want struct {
			Logprobs []float64 `json:"logprobs"`
			Loss     float64   `json:"loss"`
		}
		if err := json.Unmarshal(out, &want); err != nil {
			t.Fatalf("qwen3_torch.py output %q: %v", out, err)
		}
		lps := got["logprobs"].([]any)
		if len(lps) != len(want.Logprobs) {
			t.Fatalf("%s: %d logprobs, PyTorch %d", dir, len(lps), len(want.Logprobs))
		}
		worst := 0.0
		for i, lp := range lps {
			worst = math.Max(worst, math.Abs(lp.(float64)-want.Logprobs[i]))
		}
		if worst > 1e-4 || math.Abs(got["loss"].(float64)-want.Loss) > 1e-4 {
			t.Fatalf("%s: max |Δlogprob| %.3g, loss %v vs PyTorch %v", filepath.Base(dir), worst, got["loss"], want.Loss)
		}
		t.Logf("%s: max |Δlogprob| vs PyTorch float64: %.2g", filepath.Base(dir), worst)
	}
}

func TestModelCommandBadInputs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tiny")
	if r := runCLI(t, "model", "init", "--out", dir, "--preset", "tiny"); r.Code != 0 {
		t.Fatalf("%+v", r)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"model", "init", "--out", dir + "2", "--preset", "huge"}, `unknown model preset "huge"`},
		{[]string{"model", "init", "--out", dir}, "already exists and is not empty"},
		{[]string{"model", "init", "--out", dir + "3", "--tokenizer", "/nonexistent/tok.json"}, "--tokenizer /nonexistent/tok.json"},
		{[]string{"model", "info", "--json", dir + "-missing"}, "-missing: no such directory"},
		{[]string{"model", "logprobs", "--model", dir, "--ids", "[1,2]", "--text", "x"}, "exactly one of --text and --ids"},
		{[]string{"model", "logprobs", "--model", dir, "--ids", "[1,"}, "--ids: want a JSON array"},
		{[]string{"model", "logprobs", "--model", dir, "--ids", "[1,999]"}, "outside the vocabulary"},
		{[]string{"model", "logprobs", "--model", dir, "--ids", "[1]"}, "at least 2 tokens"},
		{[]string{"model", "bench", "--preset", "tiny", "--model", dir}, "exactly one of --model and --preset"},
		{[]string{"model", "bench", "--preset", "tiny", "--batch", "0"}, "--batch: must be in 1..65536, got 0"},
		{[]string{"model", "bench", "--preset", "tiny", "--dtype", "fp16"}, `--dtype: precision "fp16": want fp32, bf16 or auto`},
		{[]string{"model", "info", dir, "--dtype", "int8"}, `--dtype: precision "int8"`},
		{[]string{"model", "convert", "--in", dir, "--out", dir + "-b", "--dtype", "fp8"}, `--dtype "fp8": want fp32 or bf16`},
		{[]string{"model", "convert", "--in", dir + "-missing", "--out", dir + "-b", "--dtype", "bf16"}, "-missing: no such directory"},
		{[]string{"model", "convert", "--in", dir, "--out", dir, "--dtype", "bf16"}, "holds the input"},
	} {
		r := runCLI(t, tc.args...)
		if r.Code != 1 || !strings.Contains(r.Stderr, tc.want) || strings.Count(r.Stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want exit 1 and one line containing %q", tc.args, r.Code, r.Stderr, tc.want)
		}
	}
}

func TestModelBenchRuns(t *testing.T) {
	testenv.Short(t, "a bench run as a test")
	r := runCLI(t, "model", "bench", "--preset", "tiny", "--train", "--batch", "2", "--seq", "16", "--steps", "1", "--json")
	if r.Code != 0 {
		t.Fatalf("%+v", r)
	}
	out := decodeJSON(t, r)
	if out["tokens_per_s"].(float64) <= 0 || out["batch"] != 2.0 || out["seq"] != 16.0 {
		t.Fatalf("bench: %v", out)
	}
	// The step's rate against SGEMM's, measured in the same run.
	step, sgemm := out["step_gflops"].(float64), out["sgemm_gflops"].(float64)
	before, after := out["sgemm_gflops_before"].(float64), out["sgemm_gflops_after"].(float64)
	if step <= 0 || sgemm <= 0 || sgemm != (before+after)/2 || out["sgemm_fraction"].(float64) != step/sgemm {
		t.Fatalf("bench: step %v GFLOP/s, sgemm %v, fraction %v", step, sgemm, out["sgemm_fraction"])
	}
	if _, ok := out["repeats"]; ok {
		t.Errorf("one repeat listed: %v", out)
	}
	// One step: the SGEMM runs beside it are the first and the last, so the paired fraction is the
	// fraction. With two steps it reads each against its own pair.
	if p, f := out["sgemm_fraction_paired"].(float64), out["sgemm_fraction"].(float64); math.Abs(p-f) > 1e-9*f {
		t.Errorf("one step: paired fraction %v, fraction %v", p, f)
	}
	r = runCLI(t, "model", "bench", "--preset", "tiny", "--train", "--batch", "2", "--seq", "16", "--steps", "2", "--json")
	if out = decodeJSON(t, r); r.Code != 0 || out["sgemm_fraction_paired"].(float64) <= 0 {
		t.Fatalf("two steps: %+v", r)
	}
	// --repeat 3: each repeat's figures, and the medians (the fraction is each repeat's own).
	r = runCLI(t, "model", "bench", "--preset", "tiny", "--train", "--batch", "2", "--seq", "16", "--steps", "1", "--repeat", "3", "--json")
	if r.Code != 0 {
		t.Fatalf("%+v", r)
	}
	out = decodeJSON(t, r)
	reps, _ := out["repeats"].([]any)
	if len(reps) != 3 {
		t.Fatalf("repeats: %v", out["repeats"])
	}
	var fractions []float64
	for _, rep := range reps {
		m := rep.(map[string]any)
		f := m["sgemm_fraction"].(float64)
		if f != m["step_gflops"].(float64)/m["sgemm_gflops"].(float64) {
			t.Errorf("repeat %v", m)
		}
		fractions = append(fractions, f)
	}
	slices.Sort(fractions)
	if out["sgemm_fraction"].(float64) != fractions[1] {
		t.Errorf("fraction %v, want the median of %v", out["sgemm_fraction"], fractions)
	}
	if _, ok := reps[0].(map[string]any)["sgemm_fraction_paired"]; !ok || out["sgemm_fraction_paired"].(float64) <= 0 {
		t.Errorf("paired fraction missing: %v", out)
	}
}

func TestModelBenchGenerateRuns(t *testing.T) {
	testenv.Short(t, "a bench run as a test")
	r := runCLI(t, "model", "bench", "--preset", "tiny", "--generate", "--batch", "2", "--prompt-len", "4", "--new-tokens", "3", "--json")
	if r.Code != 0 {
		t.Fatalf("%+v", r)
	}
	out := decodeJSON(t, r)
	rows, _ := out["generate"].([]any)
	if len(rows) != 1 {
		t.Fatalf("bench: want one row, got %v", out)
	}
	if row := rows[0].(map[string]any); row["model"] != "tiny" || row["batch"] != 2.0 || row["tokens_per_s"].(float64) <= 0 {
		t.Fatalf("bench row: %v", row)
	}
}

// model convert writes a bf16 directory that model info reads at 2 bytes a parameter, and back.
func TestModelConvert(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tiny")
	if r := runCLI(t, "model", "init", "--out", dir, "--preset", "tiny"); r.Code != 0 {
		t.Fatalf("%+v", r)
	}
	if r := runCLI(t, "model", "convert", "--in", dir, "--out", dir+"-bf16", "--dtype", "bf16"); r.Code != 0 {
		t.Fatalf("%+v", r)
	}
	info := decodeJSON(t, runCLI(t, "model", "info", "--json", "--dtype", "bf16", dir+"-bf16"))
	mem := info["step_memory"].(map[string]any)
	if info["file_bytes_per_param"] != 2.0 || mem["master"].(float64) != 2*mem["weights"].(float64) {
		t.Fatalf("model info of the bf16 copy: %v", info)
	}
}
