package eval

import (
	"errors"
	"os"

	"gorstar/internal/checkpoint"
	"gorstar/internal/usererr"
	"gorstar/rollout"
)

// Manifest is what a result depends on, written beside every result so that two numbers can be
// compared, or shown not to be comparable. A resumed run must have the same manifest.
type Manifest struct {
	// The data, the template, the sampler, the seeds and the model, as `gorstar rollout` records
	// them (its Reward is left empty: Grading says how the samples are graded).
	rollout.Manifest
	Limit int `json:"limit"`
	// Tool: the tool's schema was in the prompt (false with --no-tool).
	Tool bool `json:"tool"`
	// Grading is the modes every sample is graded under: strict for the summary, rstar2 beside it.
	Grading string `json:"grading"`
}

func readManifest(path string) (Manifest, error) {
	var m Manifest
	err := checkpoint.ReadManifest(path, &m)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		err = usererr.New("eval: %v", err)
	}
	return m, err
}

func writeManifest(path string, m Manifest) error { return checkpoint.WriteManifest(path, m) }
