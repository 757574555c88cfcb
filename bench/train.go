package bench

import (
	"context"
	"runtime"
	"strconv"
	"time"

	"gorstar/internal/stats"
	"gorstar/kernels"
	"gorstar/model"
)

// SGEMMRefTime is how long each SGEMM reference measurement of Train runs.
const SGEMMRefTime = 500 * time.Millisecond

// TrainOptions says what Train measures.
type TrainOptions struct {
	Model *model.Model // its precision, recomputed layers and loss chunk as they are to be measured
	Name  string       // what the result calls the model (a directory or a preset)
	// Dir is the model's directory for the PyTorch side; "" saves the model to a temporary one.
	Dir               string
	Batch, Seq, Steps int
	Repeat            int // measurements in turn, reported as medians (≥ 1)
	Seed              uint64
	Torch             *Torch       // the PyTorch side; nil runs none
	Warn              func(string) // told why the PyTorch side is skipped, when it is; may be nil
}

// TrainRepeat is one measurement of Train: SGEMM, then each step and SGEMM again.
type TrainRepeat struct {
	TokensPerS float64 `json:"tokens_per_s"`
	Seconds    float64 `json:"seconds"`
	StepGFLOPS float64 `json:"step_gflops"`
	SGEMM      float64 `json:"sgemm_gflops"` // the mean of Before and After
	Before     float64 `json:"sgemm_gflops_before"`
	After      float64 `json:"sgemm_gflops_after"`
	Fraction   float64 `json:"sgemm_fraction"` // StepGFLOPS / SGEMM
	// Paired is the median over the steps of each step's GFLOP/s over the mean of the SGEMM
	// measurements just before and after it: the drift of a longer span cancels out.
	Paired float64 `json:"sgemm_fraction_paired"`
}

// TrainResult is what Train measured: the medians of the repeats. Its fields are in the order of
// their JSON names.
type TrainResult struct {
	Backend       string        `json:"backend"`
	Batch         int           `json:"batch"`
	GFLOPPerToken float64       `json:"gflop_per_token"`
	GOMAXPROCS    int           `json:"gomaxprocs"`
	Mode          string        `json:"mode"` // "train"
	Model         string        `json:"model"`
	NumParams     int64         `json:"num_params"`
	Ratio         float64       `json:"ratio,omitempty"`   // TokensPerS / TorchTokensPerS
	Repeats       []TrainRepeat `json:"repeats,omitempty"` // each repeat's, when more than one
	Seconds       float64       `json:"seconds"`
	Seq           int           `json:"seq"`
	Fraction      float64       `json:"sgemm_fraction"`
	Paired        float64       `json:"sgemm_fraction_paired"`
	SGEMM         float64       `json:"sgemm_gflops"`
	After         float64       `json:"sgemm_gflops_after"`
	Before        float64       `json:"sgemm_gflops_before"`
	StepGFLOPS    float64       `json:"step_gflops"`
	Steps         int           `json:"steps"`
	Threads       int           `json:"threads"`
	TokensPerS    float64       `json:"tokens_per_s"`
	TorchSkipped  string        `json:"torch_skipped,omitempty"`
	// TorchTokensPerS is the PyTorch reference's rate on the same shapes and threads (0: not run).
	TorchTokensPerS float64 `json:"torch_tokens_per_s,omitempty"`
}

// Train times o.Steps training steps (forward, backward, AdamW) of o.Batch × o.Seq random tokens
// after a warm-up step, against the ceiling measured in the same run on the same threads: SGEMM on
// the step's MLP shapes, before every step and after the last (a shared machine's speed drifts
// over a run). The fraction reads the steps against the first and last SGEMM measurements; the
// paired fraction reads each step against the two beside it. With o.Repeat > 1, that o.Repeat
// times, and the medians. It modifies the model's weights.
func Train(ctx context.Context, o TrainOptions) (TrainResult, error) {
	m := o.Model
	flops := m.Config.TrainFLOPsPerToken(o.Seq)
	var repeats []TrainRepeat
	var last model.TrainBench
	for range max(o.Repeat, 1) {
		r, res, err := trainRepeat(ctx, m, o.Batch, o.Seq, o.Steps, o.Seed, flops)
		if err != nil {
			return TrainResult{}, err
		}
		repeats, last = append(repeats, r), res
	}
	mr := medianTrain(repeats)
	res := TrainResult{
		Backend: kernels.Backend(), Batch: o.Batch, GFLOPPerToken: flops / 1e9, GOMAXPROCS: runtime.GOMAXPROCS(0),
		Mode: "train", Model: o.Name, NumParams: m.Config.NumParams(), Seconds: mr.Seconds, Seq: o.Seq,
		Fraction: mr.Fraction, Paired: mr.Paired, SGEMM: mr.SGEMM, After: mr.After, Before: mr.Before,
		StepGFLOPS: mr.StepGFLOPS, Steps: last.Steps, Threads: kernels.Threads(), TokensPerS: mr.TokensPerS,
	}
	if len(repeats) > 1 {
		res.Repeats = repeats
	}
	if o.Torch == nil {
		return res, nil
	}
	if res.TorchSkipped = o.Torch.Missing(ctx); res.TorchSkipped != "" {
		if o.Warn != nil {
			o.Warn(res.TorchSkipped)
		}
		return res, nil
	}
	dir, cleanup, err := savedModel(m, o.Name, o.Dir)
	if err != nil {
		return res, err
	}
	defer cleanup()
	t, err := o.Torch.run(ctx, "train-bench", dir, res.Threads, m.Precision(),
		"--batch", strconv.Itoa(o.Batch), "--seq", strconv.Itoa(o.Seq), "--steps", strconv.Itoa(o.Steps))
	if err != nil {
		return res, err
	}
	res.TorchTokensPerS, res.Ratio = t, res.TokensPerS/t
	return res, nil
}

// trainRepeat is one repeat of Train: the training steps, with the SGEMM reference measured before
// each and after the last, on one OS thread (one OpenMP team).
func trainRepeat(ctx context.Context, m *model.Model, batch, seq, steps int, seed uint64, flops float64) (TrainRepeat, model.TrainBench, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ref := model.NewSGEMMRef(m.Config, batch*seq)
	defer ref.Close()
	var refs []float64
	res, err := model.BenchmarkTrainEach(ctx, m, batch, seq, steps, seed, func() error {
		g, err := ref.Rate(ctx, SGEMMRefTime)
		refs = append(refs, g)
		return err
	})
	if err != nil {
		return TrainRepeat{}, res, err
	}
	before, after := refs[0], refs[len(refs)-1]
	r := TrainRepeat{TokensPerS: res.TokensPerSecond, Seconds: res.Seconds, StepGFLOPS: flops * res.TokensPerSecond / 1e9,
		SGEMM: (before + after) / 2, Before: before, After: after}
	r.Fraction = r.StepGFLOPS / r.SGEMM
	paired := make([]float64, len(res.StepSeconds))
	for i, sec := range res.StepSeconds {
		paired[i] = flops * float64(batch*seq) / sec / 1e9 / ((refs[i] + refs[i+1]) / 2)
	}
	r.Paired = stats.Median(paired)
	return r, res, nil
}

// medianTrain is the field-by-field median of the repeats (one repeat: itself). The fraction is the
// median of each repeat's own, not the ratio of the medians.
func medianTrain(rs []TrainRepeat) TrainRepeat {
	med := func(f func(TrainRepeat) float64) float64 { return stats.MedianOf(rs, f) }
	return TrainRepeat{
		TokensPerS: med(func(r TrainRepeat) float64 { return r.TokensPerS }),
		Seconds:    med(func(r TrainRepeat) float64 { return r.Seconds }),
		StepGFLOPS: med(func(r TrainRepeat) float64 { return r.StepGFLOPS }),
		SGEMM:      med(func(r TrainRepeat) float64 { return r.SGEMM }),
		Before:     med(func(r TrainRepeat) float64 { return r.Before }),
		After:      med(func(r TrainRepeat) float64 { return r.After }),
		Fraction:   med(func(r TrainRepeat) float64 { return r.Fraction }),
		Paired:     med(func(r TrainRepeat) float64 { return r.Paired }),
	}
}
