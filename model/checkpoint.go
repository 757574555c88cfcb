package model

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gorstar/internal/atomicfile"
	"gorstar/internal/usererr"
	"gorstar/safetensors"
)

// A checkpoint is a directory checkpoints/step-NNNNNNNN that is a complete Hugging Face model
// directory (it loads with Load, or in transformers) plus what a bit-exact resume needs:
// optimizer.safetensors (the AdamW moments, float32), trainer_state.json (TrainState) and a DONE
// marker written last. The directory is published atomically, so a crash leaves either the whole
// checkpoint or none.
const (
	checkpointPrefix = "step-"
	optimizerFile    = "optimizer.safetensors"
	stateFile        = "trainer_state.json"
	doneFile         = "DONE"
)

// TrainState is the training loop's own state saved with a checkpoint. The model package does not
// interpret RNG or Cursor: the caller stores its random generator's state (for example from
// math/rand/v2's PCG.MarshalBinary) and its position in the data.
type TrainState struct {
	Step          int             `json:"step"`           // the caller's step count
	OptimizerStep int             `json:"optimizer_step"` // AdamW steps taken (bias correction)
	RNG           []byte          `json:"rng,omitempty"`
	Cursor        json.RawMessage `json:"cursor,omitempty"`
	Extra         json.RawMessage `json:"extra,omitempty"` // anything else the caller wants back
}

// CheckpointPath is where the checkpoint of step lives under dir.
func CheckpointPath(dir string, step int) string {
	return filepath.Join(dir, fmt.Sprintf("%s%08d", checkpointPrefix, step))
}

// SaveCheckpoint writes the model, the optimizer moments and st to CheckpointPath(dir, st.Step)
// and returns that path. st.OptimizerStep is taken from opt.
func SaveCheckpoint(dir string, m *Model, opt *Optimizer, st TrainState) (string, error) {
	path := CheckpointPath(dir, st.Step)
	st.OptimizerStep = opt.Step
	err := atomicfile.WriteDir(path, func(tmp string) error {
		if err := m.writeHF(tmp, safetensors.F32); err != nil { // F32: resume must be exact
			return err
		}
		moments := append(renamed(opt.M.tensors(), "exp_avg."), renamed(opt.V.tensors(), "exp_avg_sq.")...)
		if err := safetensors.Write(filepath.Join(tmp, optimizerFile), moments,
			map[string]string{"optimizer_step": strconv.Itoa(opt.Step)}); err != nil {
			return fmt.Errorf("save optimizer state: %w", err)
		}
		js, err := json.MarshalIndent(st, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(tmp, stateFile), append(js, '\n'), 0o644); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(tmp, doneFile), []byte("ok\n"), 0o644)
	})
	if err != nil {
		return "", fmt.Errorf("save checkpoint %s: %w", path, err)
	}
	return path, nil
}

func renamed(ts []safetensors.Tensor, prefix string) []safetensors.Tensor {
	for i := range ts {
		ts[i].Name = prefix + ts[i].Name
	}
	return ts
}

// LatestCheckpoint returns the path of the complete checkpoint (one with DONE) of the highest
// step under dir, or "" when there is none (a missing dir included).
func LatestCheckpoint(dir string) (string, error) {
	steps, err := checkpointSteps(dir)
	if err != nil || len(steps) == 0 {
		return "", err
	}
	return CheckpointPath(dir, steps[len(steps)-1]), nil
}

// checkpointSteps lists the steps of the complete checkpoints under dir, ascending.
func checkpointSteps(dir string) ([]int, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list checkpoints in %s: %w", dir, err)
	}
	var steps []int
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || !strings.HasPrefix(name, checkpointPrefix) {
			continue
		}
		step, err := strconv.Atoi(strings.TrimPrefix(name, checkpointPrefix))
		if err != nil || step < 0 {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, name, doneFile)); err == nil {
			steps = append(steps, step)
		}
	}
	slices.Sort(steps)
	return steps, nil
}

// PruneCheckpoints removes all but the newest keep complete checkpoints under dir.
func PruneCheckpoints(dir string, keep int) error {
	steps, err := checkpointSteps(dir)
	if err != nil {
		return err
	}
	for i := 0; i < len(steps)-keep; i++ {
		if err := os.RemoveAll(CheckpointPath(dir, steps[i])); err != nil {
			return fmt.Errorf("prune checkpoint: %w", err)
		}
	}
	return nil
}

// LoadCheckpoint reads a checkpoint written by SaveCheckpoint: the model, an optimizer with cfg
// and the saved moments and step, and the caller's TrainState.
func LoadCheckpoint(path string, cfg AdamWConfig) (*Model, *Optimizer, TrainState, error) {
	var st TrainState
	if _, err := os.Stat(filepath.Join(path, doneFile)); err != nil {
		return nil, nil, st, usererr.New("%s: not a complete checkpoint (no %s marker)", path, doneFile)
	}
	js, err := os.ReadFile(filepath.Join(path, stateFile))
	if err != nil {
		return nil, nil, st, usererr.New("%s: %v", path, err)
	}
	if err := json.Unmarshal(js, &st); err != nil {
		return nil, nil, st, usererr.New("%s: invalid JSON: %v", filepath.Join(path, stateFile), err)
	}
	m, err := Load(path)
	if err != nil {
		return nil, nil, st, err
	}
	opt := m.NewOptimizer(cfg)
	opt.Step = st.OptimizerStep
	f, err := safetensors.Open(filepath.Join(path, optimizerFile))
	if err != nil {
		opt.Close()
		m.Close()
		return nil, nil, st, err
	}
	defer f.Close()
	where := filepath.Join(path, optimizerFile)
	for _, part := range []struct {
		set    *ParamSet
		prefix string
	}{{opt.M, "exp_avg."}, {opt.V, "exp_avg_sq."}} {
		if err := part.set.read(prefixed{f, part.prefix}, where); err != nil {
			opt.Close()
			m.Close()
			return nil, nil, st, err
		}
	}
	return m, opt, st, nil
}

// prefixed reads tensor name as prefix+name from a file.
type prefixed struct {
	f      *safetensors.File
	prefix string
}

func (p prefixed) Has(name string) bool { return p.f.Has(p.prefix + name) }
func (p prefixed) Info(name string) (safetensors.Info, error) {
	return p.f.Info(p.prefix + name)
}
func (p prefixed) ReadFloat32(name string, dst []float32) error {
	return p.f.ReadFloat32(p.prefix+name, dst)
}
