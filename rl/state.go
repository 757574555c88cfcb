package rl

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"

	"gorstar/chat"
	"gorstar/config"
	"gorstar/engine"
	"gorstar/internal/usererr"
	"gorstar/model"
	"gorstar/tokenizer"
)

// runState is what a resume needs besides the weights and the moments; it travels in the
// checkpoint's Extra. The data order of a stage is a function of the seed and the stage, so the
// count of problems drawn is the whole data cursor.
type runState struct {
	Fingerprint string        `json:"fingerprint"`
	Step        int           `json:"step"`       // RL steps done, all stages
	StageIndex  int           `json:"stage"`      // the stage of the last step done
	Drawn       int           `json:"drawn"`      // problems drawn in that stage so far
	Hard        []int         `json:"hard"`       // a hard_only stage's problems (indices into its data)
	StageReady  bool          `json:"stage_open"` // the stage's set-up (filter, optimizer reset) is done
	Seconds     float64       `json:"seconds"`
	Last        StepMetrics   `json:"last"`
	Stages      []StageResult `json:"stages"`
}

// checkpointsDir is where a run keeps its resumable checkpoints, under Out.
func checkpointsDir(out string) string { return filepath.Join(out, "checkpoints") }

// checkOut refuses an Out that is a file, and a fresh run over another run's checkpoints.
func checkOut(out string, resume bool) error {
	if out == "" {
		return usererr.New("rl: no output directory (--out)")
	}
	if st, err := os.Stat(out); err == nil && !st.IsDir() {
		return usererr.New("--out %s: is a file, want a directory", out)
	}
	latest, err := model.LatestCheckpoint(checkpointsDir(out))
	if err != nil {
		return err
	}
	if resume && latest == "" {
		return usererr.New("--resume: no complete checkpoint in %s", checkpointsDir(out))
	}
	if !resume && latest != "" {
		return usererr.New("--out %s: holds checkpoints of an earlier run (%s): pass --resume to continue it, or choose another directory", out, filepath.Base(latest))
	}
	return nil
}

func (t *trainer) adamW() model.AdamWConfig {
	c := t.o.RL
	return model.AdamWConfig{Beta1: float32(c.Beta1), Beta2: float32(c.Beta2), Eps: 1e-8,
		WeightDecay: float32(c.WeightDecay), MaxGradNorm: c.GradClip}
}

// loadPolicy loads the SFT model (or, with Resume, the newest checkpoint with its optimizer and
// state) and, unless the rollouts are remote, starts the engine that owns it from then on.
func (t *trainer) loadPolicy() error {
	tok, err := tokenizer.Load(t.o.Model)
	if err != nil {
		return err
	}
	t.tok = tok
	t.st.Fingerprint = fingerprint(t.o)
	t.pcg = rand.NewPCG(t.o.Seed, 0x726f63) // "roc"
	if err := t.checkMemory(); err != nil {
		return err
	}
	if t.o.Resume {
		err = t.resume()
	} else {
		t.m, err = model.Load(t.o.Model)
		if err == nil {
			t.opt = t.m.NewOptimizer(t.adamW())
		}
	}
	if t.m != nil {
		t.closer = append(t.closer, t.m.Close)
	}
	if err != nil {
		return err
	}
	t.closer = append(t.closer, func() { t.opt.Close() })
	t.m.Recompute, t.m.LossChunkTokens = t.o.Recompute, t.o.LossChunkTokens
	if err := t.m.SetPrecision(t.o.Precision); err != nil { // before the engine: it decodes with the same kernels
		return err
	}
	t.rng = rand.New(t.pcg)
	if tok.VocabSize() > t.m.Config.VocabSize {
		return usererr.New("%s: the tokenizer has %d tokens, more than the model's vocab_size %d", t.o.Model, tok.VocabSize(), t.m.Config.VocabSize)
	}
	if _, err := chat.LoadTemplate(t.o.Rollout.Template); err != nil {
		return usererr.Wrap(err)
	}
	if t.remote != nil {
		return nil
	}
	return t.startEngine()
}

// checkMemory refuses a run whose update passes (rl.micro_batch_tokens) would not fit the memory
// budget, before the policy loads. The rollout engine's KV cache comes on top (at most 4 GiB).
func (t *trainer) checkMemory() error {
	return model.CheckDirFit(t.o.Model, t.o.MemoryGiB, model.FitOptions{Precision: t.o.Precision,
		Tokens: t.o.RL.MicroBatchTokens, MinTokens: min(t.o.RL.MicroBatchTokens, 512), Recompute: t.o.Recompute,
		LossChunk: t.o.LossChunkTokens, What: "rl", TokensKey: "rl.micro_batch_tokens"})
}

// startEngine sizes the engine for a step's rollouts: every rollout of a step in flight at once,
// their caches within 4 GiB.
func (t *trainer) startEngine() error {
	seqs := t.concurrency()
	budget := 0
	for _, s := range t.o.RL.Stages {
		budget = max(budget, s.MaxResponseTokens)
	}
	budget = max(budget, t.o.Eval.MaxResponseTokens)
	perToken := t.m.Config.KVBytesPerToken(t.m.Precision())
	kv := min(seqs*(1536+budget), (4<<30)/max(perToken, 1))
	eng, err := engine.New(t.m, engine.Options{MaxSeqs: seqs, KVTokens: kv, Tokenizer: t.tok, Seed: t.o.Seed})
	if err != nil {
		return err
	}
	t.eng = eng
	t.closer = append(t.closer, eng.Close)
	return nil
}

// concurrency is the number of rollouts in flight at once: a whole step's, at most 256.
func (t *trainer) concurrency() int {
	c := t.o.RL
	n := max(c.PromptsPerStep*c.Oversample*c.GroupSize, c.HardOnlySamples*8)
	return min(n, 256)
}

// resume loads the newest complete checkpoint in Out and checks it belongs to this run.
func (t *trainer) resume() error {
	path, err := model.LatestCheckpoint(checkpointsDir(t.o.Out))
	if err != nil {
		return err
	}
	if path == "" {
		return usererr.New("--resume: no complete checkpoint in %s", checkpointsDir(t.o.Out))
	}
	m, opt, ts, err := model.LoadCheckpoint(path, t.adamW())
	if err != nil {
		return err
	}
	t.m, t.opt = m, opt
	var st runState
	if err := json.Unmarshal(ts.Extra, &st); err != nil {
		return usererr.New("%s: trainer_state.json field extra: %v", path, err)
	}
	if st.Fingerprint != t.st.Fingerprint {
		return usererr.New("--resume %s: the model, data, [rl]/[rollout]/[reward] settings or the seed differ from the run that wrote it", path)
	}
	if err := t.pcg.UnmarshalBinary(ts.RNG); err != nil {
		return usererr.New("%s: trainer_state.json field rng: %v", path, err)
	}
	t.st = st
	return nil
}

// checkpoint saves the state after the step just done (on the engine's goroutine, where the
// model lives) and records where the data stands.
func (t *trainer) checkpoint(ctx context.Context) error {
	if !t.o.World.Root() { // rank 0 writes; the others wait until it is there (StageEnd reads it)
		return t.o.World.Collectives().Barrier()
	}
	defer t.o.World.Collectives().Barrier()
	extra, err := json.Marshal(t.st)
	if err != nil {
		return err
	}
	rng, err := t.pcg.MarshalBinary()
	if err != nil {
		return err
	}
	cursor, _ := json.Marshal(map[string]int{"stage": t.st.StageIndex, "drawn": t.st.Drawn})
	var path string
	err = t.withModel(ctx, func(m *model.Model) error {
		var err error
		path, err = model.SaveCheckpoint(checkpointsDir(t.o.Out), m, t.opt,
			model.TrainState{Step: t.st.Step, RNG: rng, Cursor: cursor, Extra: extra})
		return err
	})
	if err == nil {
		t.o.logf("rl: checkpoint %s", path)
	}
	return err
}

// fingerprint identifies what fixes the run's data order and arithmetic: the inputs and the
// settings that change a step. A resume must match it.
func fingerprint(o Options) string {
	h := fnv.New64a()
	for _, p := range []string{o.Model, o.Data, o.EvalData} {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	for _, p := range []string{o.Data, o.EvalData} {
		if st, err := os.Stat(p); err == nil {
			binary.Write(h, binary.LittleEndian, st.Size())
		}
	}
	c := o.RL
	c.SaveEvery = 0 // free to change on resume
	r := o.Rollout
	r.Endpoints = nil // the servers' addresses too; whether rollouts are remote (TIS) is kept
	js, _ := json.Marshal(struct {
		RL      config.RL
		Rollout config.Rollout
		Remote  bool
		Reward  config.Reward
		Eval    config.Eval
		Seed    uint64
	}{c, r, len(o.Rollout.Endpoints) > 0, o.Reward, o.Eval, o.Seed})
	h.Write(js)
	return hex.EncodeToString(h.Sum(nil))
}
