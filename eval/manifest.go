package eval

import (
	"errors"
	"os"

	"gorstar/internal/checkpoint"
	"gorstar/internal/usererr"
	"gorstar/rollout"
)

// SeedRule says how each sample's seed is made, so a reader can redraw any sample.
const SeedRule = rollout.SeedRule

// Manifest is what a result depends on, written beside every result so that two numbers can be
// compared, or shown not to be comparable. A resumed run must have the same manifest.
type Manifest struct {
	Data       string `json:"data"`
	DataSHA256 string `json:"data_sha256"`
	Problems   int    `json:"problems"`
	Limit      int    `json:"limit"`

	// Template is the chat template's name; TemplateSHA256 fingerprints the prompt it renders for
	// a fixed probe with the tool schema and primer, so an edited template shows.
	Template       string `json:"template"`
	TemplateSHA256 string `json:"template_sha256"`
	Tool           bool   `json:"tool"`
	ToolTextChars  int    `json:"tool_text_chars"`
	// ToolSessions: a sample's calls shared one live interpreter (absent: each ran afresh).
	ToolSessions bool `json:"tool_sessions,omitempty"`

	Samples     int     `json:"samples"`
	Temperature float64 `json:"temperature"`
	TopP        float64 `json:"top_p"`
	MaxTokens   int     `json:"max_tokens"`
	MaxTurns    int     `json:"max_turns"`
	Seed        uint64  `json:"seed"`
	SeedRule    string  `json:"seed_rule"`

	// Model and ModelSHA256 (config.json and the safetensors) for a native run; Endpoints and
	// ServedModel for a remote one.
	Model       string   `json:"model,omitempty"`
	ModelSHA256 string   `json:"model_sha256,omitempty"`
	Endpoints   []string `json:"endpoints,omitempty"`
	ServedModel string   `json:"served_model,omitempty"`

	Gorstar string `json:"gorstar_version"`
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
