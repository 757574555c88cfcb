package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"gorstar/chat"
	"gorstar/config"
	"gorstar/data"
	"gorstar/eval/metrics"
	"gorstar/internal/atomicfile"
	"gorstar/internal/checkpoint"
	"gorstar/internal/progress"
	"gorstar/internal/usererr"
	"gorstar/pytool"
	"gorstar/reward"
	"gorstar/rollout"
)

// Paths returns the files an evaluation writes beside out (RESULTS.parquet): the Markdown table,
// the manifest and the checkpoint of finished samples kept while the run is unfinished.
func Paths(out string) (markdown, manifest, partial string) {
	base := strings.TrimSuffix(out, ".parquet")
	return base + ".md", base + ".manifest.json", base + ".partial.jsonl"
}

// Run evaluates a policy on a problem set: Eval.Samples samples per problem with the tool, graded
// strictly and under rStar2's grading, written per sample to Out (Parquet) with a Markdown table
// and a manifest beside it. Finished samples are kept in a checkpoint as they finish, so a run
// that is killed or fails midway, run again with the same Out, redoes only the unfinished
// samples — provided its manifest is the same.
func Run(ctx context.Context, o Options) (Result, error) {
	start := time.Now()
	if err := checkOptions(&o); err != nil {
		return Result{}, err
	}
	sets := o.evalSets()
	problems, names, err := loadSets(ctx, sets, o.Eval.Limit)
	if err != nil {
		return Result{}, err
	}
	man, err := baseManifest(o, sets, len(problems))
	if err != nil {
		return Result{}, err
	}
	tmpl, err := chat.LoadTemplate(o.Template)
	if err != nil {
		return Result{}, usererr.New("eval: template %q: %v", o.Template, err)
	}
	co := chatOptions(tmpl, o.NoTool)
	pol, err := openSampler(ctx, o, tmpl, co, &man)
	if err != nil {
		return Result{}, err
	}
	defer pol.close()

	mdPath, manPath, partialPath := Paths(o.Out)
	var done []Record
	var ckpt *checkpoint.Log[Record] // rank 0's alone under a launcher (shard.go)
	if o.World.Root() {
		if done, ckpt, err = resume(man, partialPath, problems); err != nil {
			return Result{}, err
		}
		defer ckpt.Close()
	}
	if done, err = shareResumed(o.World, done); err != nil {
		return Result{}, err
	}

	tools := o.Tools
	if tools == nil {
		lp, err := newLazyPool(ctx, o)
		if err != nil {
			return Result{}, err
		}
		defer lp.Close()
		tools = lp
	}
	run := &runState{o: o, problems: problems, ckpt: ckpt, records: done,
		bar: progress.New(int64(shareOf(o.World, len(problems))*o.Eval.Samples), "eval", o.Progress)}
	run.bar.Add(len(done))
	for _, r := range done {
		run.count(r)
	}
	finished := make(map[[2]int]bool, len(done))
	for _, r := range done {
		finished[[2]int{r.ProblemIndex, r.Sample}] = true
	}
	ro := rolloutOptions(o, co)
	ro.Pending = func(i, j int) bool { return ours(o.World, i) && !finished[[2]int{i, j}] }
	ro.OnFinish = run.finish
	genStart := time.Now()
	runErr := pol.run(ctx, tools, ro, problems)
	genWall := time.Since(genStart)
	run.bar.Finish()
	if err := run.failure(runErr, partialPath); err != nil {
		return Result{}, err
	}
	generated, err := run.gatherNew(o.World, len(done))
	if err != nil {
		return Result{}, err
	}

	res := run.result(man, sets, names)
	if man.Mode == rollout.ModeText {
		res.Warnings = append([]string{TextModeWarning}, res.Warnings...)
	}
	res.Resumed, res.Generated = len(done), len(run.records)-len(done)
	res.Out, res.Markdown, res.Manifest = o.Out, mdPath, manPath
	if s := genWall.Seconds(); s > 0 {
		res.TokensPerS = float64(generated) / s
	}
	if !o.World.Root() {
		return res, nil
	}
	if err := writeAll(o.Out, mdPath, manPath, man, run.records, &res); err != nil {
		return Result{}, err
	}
	ckpt.Close()
	checkpoint.Remove(partialPath)
	for _, w := range res.Warnings {
		if o.Warn != nil {
			o.Warn(w)
		}
	}
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

// checkOptions rejects what cannot run, in the user's words, and fills the defaults.
func checkOptions(o *Options) error {
	switch {
	case o.Eval.Limit < 0:
		return usererr.New("eval: --limit must be ≥ 0, got %d", o.Eval.Limit)
	case o.Data == "" && len(o.Eval.Sets) == 0:
		return usererr.New("eval: --data FILE is required (the problems to evaluate on; repeat it, or list [[eval.sets]], for several sets)")
	case o.Out == "":
		return usererr.New("eval: --out RESULTS.parquet is required")
	case !strings.HasSuffix(o.Out, ".parquet"):
		return usererr.New("eval: --out must end in .parquet, got %q", o.Out)
	}
	return checkSampling(o)
}

// checkSampling checks the sampler and the policy's flags and fills the defaults: what Run and a
// Rater share.
func checkSampling(o *Options) error {
	switch {
	case o.Eval.Samples < 1:
		return usererr.New("eval: --samples must be ≥ 1, got %d", o.Eval.Samples)
	case o.Eval.Temperature < 0:
		return usererr.New("eval: --temperature must be ≥ 0, got %g", o.Eval.Temperature)
	case o.TopP < 0 || o.TopP > 1:
		return usererr.New("eval: --top-p must be in (0, 1], got %g", o.TopP)
	case o.Eval.MaxResponseTokens < 1:
		return usererr.New("eval: --max-response-tokens must be ≥ 1, got %d", o.Eval.MaxResponseTokens)
	case o.Eval.MaxTurns < 1:
		return usererr.New("eval: --max-turns must be ≥ 1, got %d", o.Eval.MaxTurns)
	case o.Model == "" && len(o.Endpoints) == 0:
		return usererr.New("eval: give --model DIR or --endpoint URL")
	case o.Model != "" && len(o.Endpoints) > 0:
		return usererr.New("eval: give --model DIR or --endpoint URL, not both")
	case len(o.Endpoints) > 0 && o.ServedModel == "":
		return usererr.New("eval: --endpoint needs --served-model NAME (the name the server lists)")
	}
	if o.Template == "" {
		o.Template = chat.DefaultTemplate
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 64
	}
	if o.ToolTextChars == 0 {
		o.ToolTextChars = 256
	}
	if o.NoTool {
		o.Eval.MaxTurns = 1
	}
	return nil
}

// baseManifest records the data, the sampler and the grading; the model's part comes when it is
// opened.
func baseManifest(o Options, sets []config.EvalSet, problems int) (Manifest, error) {
	paths := dataPaths(sets)
	hash, err := checkpoint.FileSHA256(paths...)
	if err != nil {
		return Manifest{}, err
	}
	return Manifest{
		Manifest: rollout.Manifest{
			Data: strings.Join(paths, ", "), DataSHA256: hash, Problems: problems,
			Template: o.Template, ToolTextChars: o.ToolTextChars, ToolSessions: o.ToolSessions,
			Samples: o.Eval.Samples, Temperature: o.Eval.Temperature, TopP: o.TopP,
			MaxResponseTokens: o.Eval.MaxResponseTokens, MaxTurns: o.Eval.MaxTurns, Seed: o.Seed, SeedRule: rollout.SeedRule,
			Gorstar: o.Version,
		},
		Limit: o.Eval.Limit, Tool: !o.NoTool, Grading: "strict (summary), rstar2 (beside)",
	}, nil
}

// resume reads the samples an earlier run with the same manifest finished, or starts a new
// checkpoint (its manifest beside it until the results are written); a checkpoint made under
// another manifest is refused, naming the field. The model and data paths may move: their hashes
// decide.
func resume(man Manifest, partialPath string, problems []data.Problem) ([]Record, *checkpoint.Log[Record], error) {
	ckpt, recs, err := checkpoint.Resume[Manifest, Record]("eval", man, checkpoint.PartialManifest(partialPath), partialPath, "data", "model")
	if err != nil {
		return nil, nil, err
	}
	// Keep only samples that fit this run (and each once), whatever the file holds.
	seen := map[[2]int]bool{}
	kept := recs[:0]
	for _, r := range recs {
		key := [2]int{r.ProblemIndex, r.Sample}
		if r.ProblemIndex < len(problems) && problems[r.ProblemIndex].ID == r.ProblemID &&
			r.Sample < man.Samples && !seen[key] {
			seen[key] = true
			kept = append(kept, r)
		}
	}
	return kept, ckpt, nil
}

// rolloutOptions are the loop's settings for an evaluation.
func rolloutOptions(o Options, co chat.Options) rollout.Options {
	ro := rollout.DefaultOptions()
	ro.Chat = co
	ro.MaxTurns = o.Eval.MaxTurns
	ro.MaxResponseTokens = o.Eval.MaxResponseTokens
	ro.ToolTextChars = o.ToolTextChars
	ro.ToolSessions = o.ToolSessions
	ro.Temperature, ro.TopP = o.Eval.Temperature, o.TopP
	ro.Samples, ro.Seed = o.Eval.Samples, o.Seed
	ro.Concurrency = o.Concurrency
	ro.Reward = reward.Options{Mode: reward.Strict}
	return ro
}

// runState collects finished samples as the loop hands them over.
type runState struct {
	o        Options
	problems []data.Problem
	ckpt     *checkpoint.Log[Record]
	bar      *progress.Bar

	mu        sync.Mutex
	records   []Record
	correct   int
	generated int
	failed    int
	firstFail string
	ckptErr   error
}

// finish grades a trajectory under both modes and keeps it. A trajectory the infrastructure
// spoiled — the backend failed, or the sandbox could not run one of its calls (status internal: a
// pool that did not start, a lost worker) — is not kept: it would score the model zero for the
// sandbox's fault. Its sample is redone on resume.
func (s *runState) finish(t rollout.Trajectory) {
	if why := infraFailure(t); why != "" {
		s.mu.Lock()
		s.failed++
		if s.firstFail == "" {
			s.firstFail = why
		}
		s.mu.Unlock()
		return
	}
	r := record(t, s.problems[t.ProblemIndex])
	var err error
	if s.ckpt != nil {
		err = s.ckpt.Add(r)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil && s.ckptErr == nil {
		s.ckptErr = err
	}
	s.records = append(s.records, r)
	s.generated += r.Generated
	s.count(r)
	s.bar.Add(1)
}

// infraFailure says why the infrastructure spoiled t, or "" when it did not.
func infraFailure(t rollout.Trajectory) string {
	if t.Finish == rollout.FinishError {
		return t.Error
	}
	if t.InternalToolErrors == 0 {
		return ""
	}
	for _, rec := range t.Turns {
		if rec.Status == string(pytool.StatusInternal) {
			return "the sandbox could not run a tool call: " + strings.TrimSpace(strings.SplitN(rec.ToolText, "\n", 2)[0])
		}
	}
	return fmt.Sprintf("%d tool calls failed in the sandbox itself", t.InternalToolErrors)
}

// count adds a record to the running accuracy shown on the bar.
func (s *runState) count(r Record) {
	if r.CorrectStrict {
		s.correct++
	}
	if n := len(s.records); n > 0 {
		s.bar.Describe(fmt.Sprintf("eval (acc %.1f%%)", 100*float64(s.correct)/float64(n)))
	}
}

// record grades a trajectory's response under rstar2 too (the loop graded it strictly).
func record(t rollout.Trajectory, p data.Problem) Record {
	g := reward.Grade(t.Text, p.Answer, reward.Options{Mode: reward.RStar2})
	return Record{
		ProblemID: t.ProblemID, ProblemIndex: t.ProblemIndex, Source: p.Source, Sample: t.Sample,
		Seed: t.Seed, Reference: p.Answer, Response: t.Text,
		Extracted: t.Extracted, ExtractedRStar2: g.Extracted,
		CorrectStrict: t.Correct, CorrectRStar2: g.Correct,
		Tokens: max(len(t.ResponseIDs), t.UsageTokens), Generated: t.GeneratedTokens, Turns: t.NumTurns,
		Calls: t.ToolCalls, FailedCalls: t.FailedToolCalls,
		Truncated: t.Finish == rollout.FinishTruncated, Finish: string(t.Finish),
		ResponseIDs: t.ResponseIDs,
	}
}

// failure turns what went wrong midway into one line that says the finished samples are kept.
func (s *runState) failure(runErr error, partial string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ckptErr != nil {
		return s.ckptErr
	}
	kept := fmt.Sprintf("the %d finished samples are kept in %s: run the same command again to finish", len(s.records), partial)
	if runErr != nil {
		return fmt.Errorf("eval: %w (%s)", runErr, kept)
	}
	if s.failed > 0 {
		return usererr.New("eval: %d samples failed, e.g. %s; %s", s.failed, s.firstFail, kept)
	}
	return nil
}

// result sorts the records and summarizes them under both gradings, with the warnings.
func (s *runState) result(man Manifest, sets []config.EvalSet, names []string) Result {
	slices.SortFunc(s.records, func(a, b Record) int {
		if a.ProblemIndex != b.ProblemIndex {
			return a.ProblemIndex - b.ProblemIndex
		}
		return a.Sample - b.Sample
	})
	strict := make([]metrics.SampleResult, len(s.records))
	lenient := make([]metrics.SampleResult, len(s.records))
	for i, r := range s.records {
		strict[i] = metrics.SampleResult{ProblemID: r.ProblemID, Source: r.Source, Sample: r.Sample, Answer: r.Extracted,
			Correct: r.CorrectStrict, ResponseTokens: r.Tokens, ToolCalls: r.Calls, FailedCalls: r.FailedCalls, Truncated: r.Truncated}
		lenient[i] = strict[i]
		lenient[i].Answer, lenient[i].Correct = r.ExtractedRStar2, r.CorrectRStar2
	}
	so := metrics.SummaryOptions{Normalize: reward.Canonical, Seed: s.o.Seed}
	ls := metrics.Summarize(lenient, so)
	res := Result{Summary: metrics.Summarize(strict, so), Grading: "strict", RStar2: ls.Metrics}
	res.Sets = setRows(sets, names, res.Summary, ls)
	res.Warnings = append([]string{}, warnings(man, s.records)...)
	return res
}

// warnings flag a greedy sampler posing as avg@k: temperature 0 with k > 1, and every problem's k
// samples being the same response (a confident model repeats itself on some problems; a greedy
// sampler does on all of them).
func warnings(man Manifest, recs []Record) []string {
	var out []string
	if man.Temperature == 0 && man.Samples > 1 {
		out = append(out, fmt.Sprintf("temperature 0 with %d samples per problem: greedy samples are all alike, so avg@k is pass@1 of one sample", man.Samples))
	}
	if man.Samples < 2 {
		return out
	}
	same, problems, example := 0, 0, ""
	for start := 0; start < len(recs); {
		end := start + 1
		alike := true
		for end < len(recs) && recs[end].ProblemIndex == recs[start].ProblemIndex {
			alike = alike && recs[end].Response == recs[start].Response
			end++
		}
		if end-start > 1 {
			problems++
		}
		if end-start > 1 && alike {
			same++
			if example == "" {
				example = recs[start].ProblemID
			}
		}
		start = end
	}
	if same > 0 && same == problems {
		out = append(out, fmt.Sprintf("all %d problems have all %d samples identical (e.g. %s): check the sampler is not greedy", same, man.Samples, example))
	}
	return out
}

// writeAll writes the results Parquet, the Markdown table and the final manifest, each atomically.
func writeAll(out, mdPath, manPath string, man Manifest, recs []Record, res *Result) error {
	mj, err := json.Marshal(man)
	if err != nil {
		return err
	}
	if err := writeResults(out, recs, mj); err != nil {
		return err
	}
	err = atomicfile.Write(mdPath, func(w io.Writer) error { return writeReport(w, man, res) })
	if err != nil {
		return err
	}
	return writeManifest(manPath, man)
}

var _ pytool.Tools = (*lazyPool)(nil)
