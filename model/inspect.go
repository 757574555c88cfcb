package model

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gorstar/internal/usererr"
	"gorstar/safetensors"
)

// Info describes a model directory without loading its weights.
type Info struct {
	Config    Config
	NumParams int64
	DTypes    []string // the weight dtypes found, sorted
	FileBytes int64    // bytes of the architecture's tensors in the files
	Unused    int      // tensors in the files the architecture does not use
}

// Inspect reads dir's config.json and checks that its safetensors hold every tensor the
// architecture needs with the right shape, reading only the headers.
func Inspect(dir string) (Info, error) {
	c, err := LoadConfig(dir)
	if err != nil {
		return Info{}, err
	}
	set, err := safetensors.OpenDir(dir)
	if err != nil {
		return Info{}, err
	}
	defer set.Close()
	info := Info{Config: c, NumParams: c.NumParams()}
	dtypes := map[string]bool{}
	used := map[string]bool{}
	for _, t := range c.tensorSpecs() {
		if !set.Has(t.name) {
			return Info{}, usererr.New("%s: tensor %s is missing (want shape %v)", dir, t.name, t.shape)
		}
		ti, err := set.Info(t.name)
		if err != nil {
			return Info{}, err
		}
		if !slices.Equal(ti.Shape, t.shape) {
			return Info{}, usererr.New("%s: tensor %s has shape %v, want %v", dir, t.name, ti.Shape, t.shape)
		}
		dtypes[string(ti.DType)] = true
		info.FileBytes += ti.End - ti.Begin
		used[t.name] = true
	}
	for _, n := range set.Names() {
		if !used[n] {
			info.Unused++
		}
	}
	for d := range dtypes {
		info.DTypes = append(info.DTypes, d)
	}
	sort.Strings(info.DTypes)
	return info, nil
}

// FitOptions describe a training pass to check against the memory it may take (CheckFit).
type FitOptions struct {
	Precision Precision
	// Tokens are the tokens of one forward/backward pass (rows × padded length); MinTokens the
	// fewest a pass can hold (its longest row), the floor of a suggested smaller pass.
	Tokens, MinTokens int
	// Recompute is the model's recompute_layers; LossChunk its loss_chunk_tokens.
	Recompute, LossChunk int
	// Budget is the memory in bytes the step may take.
	Budget int64
	// What names the run in the message ("sft"); TokensKey the setting that bounds Tokens
	// ("sft.micro_batch_tokens").
	What, TokensKey string
}

// CheckFit returns nil when a training step of o fits in o.Budget (Config.StepMemory), else a
// one-line user error with what would fit: the fewest recomputed layers
// (model.recompute_layers) that bring it under, and the largest pass at the current setting.
func (c Config) CheckFit(o FitOptions) error {
	mem := func(tokens, recompute int) StepMemory {
		return c.StepMemory(o.Precision, 1, tokens, recompute, o.LossChunk)
	}
	need := mem(o.Tokens, o.Recompute)
	if need.Total <= o.Budget {
		return nil
	}
	var fixes []string
	for r := o.Recompute + 1; r <= c.NumHiddenLayers; r++ {
		if m := mem(o.Tokens, r); m.Total <= o.Budget {
			fixes = append(fixes, fmt.Sprintf("set model.recompute_layers = %d (%s)", r, GiB(m.Total)))
			break
		}
	}
	floor := max(o.MinTokens, 1)
	if mem(floor, o.Recompute).Total <= o.Budget {
		lo, hi := floor, o.Tokens // lo fits, hi does not
		for hi-lo > 1 {
			if mid := (lo + hi) / 2; mem(mid, o.Recompute).Total <= o.Budget {
				lo = mid
			} else {
				hi = mid
			}
		}
		if lo >= 2*64 {
			lo -= lo % 64
		}
		fixes = append(fixes, fmt.Sprintf("lower %s to %d (%s)", o.TokensKey, lo, GiB(mem(lo, o.Recompute).Total)))
	}
	fix := "nothing fits: the weights, gradients and optimizer alone take " +
		GiB(need.Weights+need.Master+need.Gradients+need.Optimizer) + "; use a machine with more memory"
	if len(fixes) > 0 {
		fix = strings.Join(fixes, ", or ")
	}
	return usererr.New("%s: a training step of %d tokens needs about %s (weights %s, master %s, gradients %s, optimizer %s, activations %s, %s), %s allowed: %s (model.memory_gib overrides)",
		o.What, o.Tokens, GiB(need.Total), GiB(need.Weights), GiB(need.Master), GiB(need.Gradients), GiB(need.Optimizer),
		GiB(need.Activations), SavedActivations(o.Precision), GiB(o.Budget), fix)
}

// CheckDirFit is CheckFit for the model directory dir against MemoryBudget(memoryGiB) (o.Budget
// is set here): nil where there is no budget to check against.
func CheckDirFit(dir string, memoryGiB float64, o FitOptions) error {
	budget, ok := MemoryBudget(memoryGiB)
	if !ok {
		return nil
	}
	c, err := LoadConfig(dir)
	if err != nil {
		return err
	}
	o.Budget = budget
	return c.CheckFit(o)
}

// StepPlan is what `gorstar model info` says of a training step: its memory as configured, with
// every layer kept and with every layer recomputed, and how it compares with the memory budget.
type StepPlan struct {
	Memory, KeepAll, RecomputeAll StepMemory
	Budget                        int64 // bytes; 0 with no budget to check against
	Fits                          bool
	Fit                           string // for people: "fits the … budget", CheckFit's refusal, or no budget
}

// PlanStep is the StepPlan of a step of batch × seq tokens with recompute layers recomputed and
// loss chunks of lossChunk tokens at precision p, against MemoryBudget(memoryGiB).
func (c Config) PlanStep(p Precision, batch, seq, recompute, lossChunk int, memoryGiB float64) StepPlan {
	plan := StepPlan{Memory: c.StepMemory(p, batch, seq, recompute, lossChunk),
		KeepAll:      c.StepMemory(p, batch, seq, 0, lossChunk),
		RecomputeAll: c.StepMemory(p, batch, seq, c.NumHiddenLayers, lossChunk),
		Fit:          "no memory budget to check against"}
	budget, ok := MemoryBudget(memoryGiB)
	if !ok {
		return plan
	}
	plan.Budget, plan.Fits, plan.Fit = budget, plan.Memory.Total <= budget, "fits the "+GiB(budget)+" budget"
	if err := c.CheckFit(FitOptions{Precision: p, Tokens: batch * seq, MinTokens: seq, Recompute: recompute,
		LossChunk: lossChunk, Budget: budget, What: "does not fit", TokensKey: "the batch × seq tokens"}); err != nil {
		plan.Fit = err.Error()
	}
	return plan
}

// GiB formats a byte count for people: "1.25 GiB", or "812.0 MiB" under a GiB.
func GiB(b int64) string {
	if b < 1<<30 {
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	}
	return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30))
}

// MemoryBudget is the memory a training step may take: gib GiB when gib > 0 (config
// model.memory_gib), none to check (ok false) when gib < 0 or when the machine does not say, else
// nine tenths of what the machine has available (MemAvailable, and the cgroup's limit).
func MemoryBudget(gib float64) (bytes int64, ok bool) {
	switch {
	case gib > 0:
		return int64(gib * (1 << 30)), true
	case gib < 0:
		return 0, false
	}
	avail, ok := AvailableMemory()
	return avail / 10 * 9, ok
}

// AvailableMemory is the memory the machine (or the cgroup this process runs in) can still give,
// in bytes, from /proc/meminfo's MemAvailable; ok is false where it cannot be read.
func AvailableMemory() (int64, bool) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	avail, ok := memAvailable(f)
	f.Close()
	if !ok {
		return 0, false
	}
	if raw, err := os.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		if limit, err := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64); err == nil {
			used := int64(0)
			if raw, err := os.ReadFile("/sys/fs/cgroup/memory.current"); err == nil {
				used, _ = strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
			}
			avail = min(avail, limit-used)
		}
	}
	return avail, true
}

// memAvailable reads MemAvailable from a /proc/meminfo text, in bytes.
func memAvailable(r io.Reader) (int64, bool) {
	s := bufio.NewScanner(r)
	for s.Scan() {
		if f := strings.Fields(s.Text()); len(f) >= 2 && f[0] == "MemAvailable:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}
