package rollout

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	"gorstar/chat"
	"gorstar/data"
	"gorstar/internal/checkpoint"
	"gorstar/tokenizer"
)

// SeedRule says how each trajectory's seed is made, so a reader can redraw any of them.
const SeedRule = "rollout.SampleSeed(seed, problem index, sample index)"

// Manifest is what a run's trajectories depend on (`gorstar rollout` writes it beside its traces,
// as OUT.manifest.json): a run started again on the same --out resumes only under the same one.
type Manifest struct {
	Data       string `json:"data"`
	DataSHA256 string `json:"data_sha256"`
	Problems   int    `json:"problems"`

	// Template is the chat template's name; TemplateSHA256 fingerprints the prompt it renders
	// (TemplateFingerprint), so an edited template shows.
	Template       string `json:"template"`
	TemplateSHA256 string `json:"template_sha256"`
	ToolTextChars  int    `json:"tool_text_chars"`
	ToolSessions   bool   `json:"tool_sessions,omitempty"`

	Samples           int     `json:"samples"`
	Temperature       float64 `json:"temperature"`
	TopP              float64 `json:"top_p"`
	MaxResponseTokens int     `json:"max_tokens"` // the response budget; JSON keeps the name manifests on disk have
	MaxTurns          int     `json:"max_turns"`
	Seed              uint64  `json:"seed"`
	SeedRule          string  `json:"seed_rule"`
	// Reward is the grading mode of the trajectories' rewards.
	Reward string `json:"reward,omitempty"`

	// Model and ModelSHA256 (config.json and the safetensors) for a native run; Endpoints and
	// ServedModel for a remote one.
	Model       string   `json:"model,omitempty"`
	ModelSHA256 string   `json:"model_sha256,omitempty"`
	Endpoints   []string `json:"endpoints,omitempty"`
	ServedModel string   `json:"served_model,omitempty"`

	// Mode is ModeText for text-mode samples (TextLoop: the server renders the prompts and
	// parses the calls; no ids); empty for token mode.
	Mode string `json:"mode,omitempty"`

	Gorstar string `json:"gorstar_version"`
}

// ModeText is Manifest.Mode of text-mode samples.
const ModeText = "text"

// NewManifest describes a run of the loop options o on the problems of the file data with the
// policy p (natively: its model directory's hash; remotely: its endpoints); template is the
// chat template's name.
func NewManifest(data string, problems int, template string, p *Policy, o Options, version string) (Manifest, error) {
	m := Manifest{
		Data: data, Problems: problems, Template: template,
		ToolTextChars: o.ToolTextChars, ToolSessions: o.ToolSessions,
		Samples: o.Samples, Temperature: o.Temperature, TopP: o.TopP,
		MaxResponseTokens: o.MaxResponseTokens, MaxTurns: o.MaxTurns, Seed: o.Seed, SeedRule: SeedRule,
		Reward: o.Reward.Mode.String(), Gorstar: version,
	}
	var err error
	if m.DataSHA256, err = checkpoint.FileSHA256(data); err != nil {
		return m, err
	}
	if m.TemplateSHA256, err = TemplateFingerprint(p.Tokenizer, o.Chat); err != nil {
		return m, err
	}
	return m, m.SetPolicy(p)
}

// SetPolicy records where the trajectories come from: the native model's directory and hash, or
// the endpoints and the served model.
func (m *Manifest) SetPolicy(p *Policy) error {
	if p.Engine == nil {
		m.Endpoints, m.ServedModel = p.Endpoints, p.ServedModel
		return nil
	}
	hash, err := checkpoint.ModelSHA256(p.Model)
	m.Model, m.ModelSHA256 = p.Model, hash
	return err
}

// TemplateFingerprint hashes the prompt the renderer makes for a fixed probe question: it changes
// with the template's text, the tool schema and the primer, which the name alone would not show.
func TemplateFingerprint(tok *tokenizer.Tokenizer, co chat.Options) (string, error) {
	r, err := chat.NewRenderer(tok, co)
	if err != nil {
		return "", err
	}
	ids, err := r.RenderPrompt([]chat.Message{{Role: chat.RoleUser, Content: "What is 6 times 7?"}})
	if err != nil {
		return "", err
	}
	return checkpoint.IDsSHA256(ids), nil
}

// CheckpointPaths are the files kept beside a run's traces out: the manifest of the finished run,
// and, while a run is unfinished, its finished trajectories (partial), with its manifest at
// checkpoint.PartialManifest(partial) until Finish renames it to manifest (so a run that fails
// never touches the manifest of the traces an earlier run left at out).
func CheckpointPaths(out string) (manifest, partial string) {
	base := strings.TrimSuffix(out, ".parquet")
	return base + ".manifest.json", base + ".partial.jsonl"
}

// Checkpoint keeps a run's finished trajectories as they finish, so that the run, killed or
// failed midway and started again with the same manifest, rolls out only the rest: the seeds do
// not change, so the traces are those of an uninterrupted run. Use Pending and Add as the loop's
// Options.Pending and Options.OnFinish.
type Checkpoint struct {
	log      *checkpoint.Log[Trajectory]
	Manifest string // where Finish puts the manifest
	done     map[[2]int]bool
	// Done are the trajectories an earlier run finished.
	Done []Trajectory

	mu    sync.Mutex
	added int
	err   error
}

// OpenCheckpoint resumes the run of man whose traces go to out, or starts its checkpoint; one
// left by a run with another manifest is refused, naming the field (the data and model paths may
// move: their hashes decide).
func OpenCheckpoint(out string, man Manifest, problems []data.Problem) (*Checkpoint, error) {
	manPath, partial := CheckpointPaths(out)
	log, ts, err := checkpoint.Resume[Manifest, Trajectory]("rollout", man, checkpoint.PartialManifest(partial), partial, "data", "model")
	if err != nil {
		return nil, err
	}
	c := &Checkpoint{log: log, Manifest: manPath, done: map[[2]int]bool{}}
	for _, t := range ts { // only what fits this run, each once
		key := [2]int{t.ProblemIndex, t.Sample}
		if t.ProblemIndex < len(problems) && problems[t.ProblemIndex].ID == t.ProblemID && t.Sample < man.Samples &&
			t.Finish != FinishError && !c.done[key] {
			c.done[key] = true
			c.Done = append(c.Done, t)
		}
	}
	return c, nil
}

// Path is the checkpoint's file.
func (c *Checkpoint) Path() string { return c.log.Path() }

// Pending says whether sample j of problem i is still to roll out.
func (c *Checkpoint) Pending(i, j int) bool { return !c.done[[2]int{i, j}] }

// Add keeps a finished trajectory; one the backend failed on is not kept, so it is rolled out
// again on resume. The first write error is kept for Err.
func (c *Checkpoint) Add(t Trajectory) {
	if t.Finish == FinishError {
		return
	}
	err := c.log.Add(t)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil {
		c.added++
	} else if c.err == nil {
		c.err = err
	}
}

// Err is the first error writing the checkpoint.
func (c *Checkpoint) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Merge returns the earlier run's trajectories with this run's, in order: problem by problem,
// sample by sample.
func (c *Checkpoint) Merge(ts []Trajectory) []Trajectory {
	all := append(slices.Clone(c.Done), ts...)
	slices.SortFunc(all, func(a, b Trajectory) int {
		if a.ProblemIndex != b.ProblemIndex {
			return a.ProblemIndex - b.ProblemIndex
		}
		return a.Sample - b.Sample
	})
	return all
}

// Failed is err, for a run that stopped midway, with how many finished trajectories the
// checkpoint holds and how to finish (when it holds any).
func (c *Checkpoint) Failed(err error) error {
	n := c.kept()
	if n == 0 {
		return fmt.Errorf("rollout: %w", err)
	}
	return fmt.Errorf("rollout: %w (the %d finished trajectories are kept in %s: run the same command again to finish)",
		err, n, c.Path())
}

// Discard closes the checkpoint and, when it holds no finished trajectory, removes it and the
// manifest: a run that failed before finishing anything leaves nothing behind.
func (c *Checkpoint) Discard() {
	c.log.Close()
	if c.kept() == 0 {
		checkpoint.Remove(c.Path())
	}
}

// kept counts the trajectories the checkpoint holds: the earlier run's and this one's.
func (c *Checkpoint) kept() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.Done) + c.added
}

// Close closes the checkpoint and leaves its files for a later run to resume.
func (c *Checkpoint) Close() error { return c.log.Close() }

// Finish closes the checkpoint, moves its manifest beside the traces and removes its file.
func (c *Checkpoint) Finish() error {
	c.log.Close()
	if err := os.Rename(checkpoint.PartialManifest(c.Path()), c.Manifest); err != nil {
		return err
	}
	return checkpoint.Remove(c.Path())
}

// Write ends a run that finished: it merges the earlier run's trajectories into this run's (the
// summary then counts them all, its rates staying this run's), writes the Parquet traces to out
// and, when jsonl is not "", the same as JSON lines (both files or neither), and finishes the
// checkpoint. It returns the summary of what was written.
func (c *Checkpoint) Write(out, jsonl string, trajs []Trajectory, sum Summary) (Summary, error) {
	if len(c.Done) > 0 {
		rate, secs := sum.DecodeTokensPerS, sum.Seconds
		trajs = c.Merge(trajs)
		sum = Summarize(trajs, 0)
		sum.DecodeTokensPerS, sum.Seconds, sum.Resumed = rate, secs, len(c.Done)
	}
	if err := WriteParquet(out, trajs); err != nil {
		return sum, err
	}
	if jsonl != "" {
		if err := WriteJSONL(jsonl, trajs); err != nil {
			os.Remove(out)
			return sum, err
		}
	}
	return sum, c.Finish()
}
