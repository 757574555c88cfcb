package sft

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"hash/fnv"
	"os"
	"path/filepath"

	"gorstar/config"
	"gorstar/internal/usererr"
	"gorstar/model"
)

// checkpointsDir is where a run keeps its resumable checkpoints, under Out.
func checkpointsDir(out string) string { return filepath.Join(out, "checkpoints") }

// checkOut refuses an Out that is a file, and a fresh run over another run's checkpoints.
func checkOut(out string, resume bool) error {
	if out == "" {
		return usererr.New("sft: no output directory (--out)")
	}
	st, err := os.Stat(out)
	if err == nil && !st.IsDir() {
		return usererr.New("--out %s: is a file, want a directory", out)
	}
	if resume {
		return nil
	}
	latest, err := model.LatestCheckpoint(checkpointsDir(out))
	if err != nil {
		return err
	}
	if latest != "" {
		return usererr.New("--out %s: holds checkpoints of an earlier run (%s): pass --resume to continue it, or choose another directory", out, filepath.Base(latest))
	}
	return nil
}

// cursor is where a checkpoint stands in the plan. The plan is rebuilt from the data, settings
// and seed (checked by the fingerprint), so the step alone fixes the position; epoch and example
// are for people reading trainer_state.json. No random stream is consumed while training.
type cursor struct {
	Step    int `json:"step"`
	Epoch   int `json:"epoch"`
	Example int `json:"example"` // examples of the run consumed so far
}

// loadModel starts from o.Model, or with Resume from the newest checkpoint in Out.
func (t *trainer) loadModel() error {
	c := t.o.Config
	adamw := model.AdamWConfig{Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: float32(c.WeightDecay), MaxGradNorm: c.GradClip}
	t.st.Fingerprint = t.fingerprt
	if !t.o.Resume {
		m, err := model.Load(t.o.Model)
		if err != nil {
			return err
		}
		t.m, t.opt = m, m.NewOptimizer(adamw)
		return nil
	}
	path, err := model.LatestCheckpoint(checkpointsDir(t.o.Out))
	if err != nil {
		return err
	}
	if path == "" {
		return usererr.New("--resume: no complete checkpoint in %s", checkpointsDir(t.o.Out))
	}
	if err := sameShape(t.o.Model, path); err != nil {
		return err
	}
	m, opt, ts, err := model.LoadCheckpoint(path, adamw)
	if err != nil {
		return err
	}
	t.m, t.opt = m, opt
	var st runState
	if err := json.Unmarshal(ts.Extra, &st); err != nil {
		return usererr.New("%s: trainer_state.json field extra: %v", path, err)
	}
	if st.Fingerprint != t.fingerprt {
		return usererr.New("--resume %s: the data or the [sft] settings (or the seed) differ from the run that wrote it", path)
	}
	if ts.Step > len(t.plan) {
		return usererr.New("--resume %s: step %d is past the run's %d steps", path, ts.Step, len(t.plan))
	}
	t.st, t.start = st, ts.Step
	return nil
}

// sameShape checks that a checkpoint has the architecture of the model the run was asked to train.
func sameShape(modelDir, ckpt string) error {
	want, err := model.LoadConfig(modelDir)
	if err != nil {
		return err
	}
	got, err := model.LoadConfig(ckpt)
	if err != nil {
		return err
	}
	type shape struct {
		Type                                             string
		Vocab, Hidden, Inter, Layers, Heads, KV, HeadDim int
		Tied                                             bool
	}
	of := func(c model.Config) shape {
		return shape{c.ModelType, c.VocabSize, c.HiddenSize, c.IntermediateSize, c.NumHiddenLayers,
			c.NumAttentionHeads, c.NumKeyValueHeads, c.HeadDim, c.TieWordEmbeddings}
	}
	if of(want) != of(got) {
		return usererr.New("--resume %s: checkpoint shape %+v differs from --model %s %+v", ckpt, of(got), modelDir, of(want))
	}
	return nil
}

// checkpoint saves the state after `done` steps and prunes old checkpoints.
func (t *trainer) checkpoint(done int) error {
	cur := cursor{Step: done, Epoch: t.plan[done-1].Epoch}
	for _, p := range t.plan[:done] {
		cur.Example += len(p.Examples)
	}
	curJS, err := json.Marshal(cur)
	if err != nil {
		return err
	}
	extra, err := json.Marshal(t.st)
	if err != nil {
		return err
	}
	dir := checkpointsDir(t.o.Out)
	path, err := model.SaveCheckpoint(dir, t.m, t.opt, model.TrainState{Step: done, Cursor: curJS, Extra: extra})
	if err != nil {
		return err
	}
	t.o.logf("sft: checkpoint %s", path)
	if k := t.o.Config.KeepCheckpoints; k > 0 {
		return model.PruneCheckpoints(dir, k)
	}
	return nil
}

// fingerprint identifies what fixes the run's order and arithmetic: the rendered examples, the
// held-out split and the settings that change a step. A resume must match it.
func fingerprint(train, held []Example, c config.SFT, seed uint64) string {
	h := fnv.New64a()
	for _, set := range [][]Example{train, held} {
		binary.Write(h, binary.LittleEndian, int64(len(set)))
		for _, e := range set {
			binary.Write(h, binary.LittleEndian, e.IDs)
			binary.Write(h, binary.LittleEndian, e.Mask)
		}
	}
	c.SaveEvery, c.KeepCheckpoints, c.EvalEvery = 0, 0, 0 // free to change on resume
	js, _ := json.Marshal(struct {
		C    config.SFT
		Seed uint64
	}{c, seed})
	h.Write(js)
	return hex.EncodeToString(h.Sum(nil))
}
