package eval

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"gorstar/internal/atomicfile"
	"gorstar/internal/usererr"
)

// SeedRule says how each sample's seed is made, so a reader can redraw any sample.
const SeedRule = "rollout.SampleSeed(seed, problem index, sample index)"

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

// diff names the first field in which m and other differ, with both values; "" when they agree.
// The model and data paths may move: their hashes decide.
func (m Manifest) diff(other Manifest) string {
	a, b := reflect.ValueOf(m), reflect.ValueOf(other)
	t := a.Type()
	for i := range t.NumField() {
		name := strings.Split(t.Field(i).Tag.Get("json"), ",")[0]
		if name == "data" || name == "model" {
			continue
		}
		if !reflect.DeepEqual(a.Field(i).Interface(), b.Field(i).Interface()) {
			return fmt.Sprintf("%s (was %v, now %v)", name, b.Field(i).Interface(), a.Field(i).Interface())
		}
	}
	return ""
}

func readManifest(path string) (Manifest, error) {
	var m Manifest
	b, err := os.ReadFile(path)
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, usererr.New("eval: %s: not a manifest: %v", path, err)
	}
	return m, nil
}

func writeManifest(path string, m Manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteBytes(path, append(b, '\n'))
}

// fileSHA256 hashes the files in order, as one stream.
func fileSHA256(paths ...string) (string, error) {
	h := sha256.New()
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return "", err
		}
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return "", fmt.Errorf("hash %s: %w", p, err)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// modelSHA256 hashes a model directory's config.json and its safetensors (in name order).
func modelSHA256(dir string) (string, error) {
	weights, err := filepath.Glob(filepath.Join(dir, "*.safetensors"))
	if err != nil {
		return "", err
	}
	slices.Sort(weights)
	return fileSHA256(append([]string{filepath.Join(dir, "config.json")}, weights...)...)
}

func textSHA256(ids []int32) string {
	h := sha256.New()
	for _, id := range ids {
		fmt.Fprintf(h, "%d,", id)
	}
	return hex.EncodeToString(h.Sum(nil))
}
