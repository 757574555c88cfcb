package metrics

import (
	"cmp"
	"slices"
)

// SampleResult is one graded sample of one problem.
type SampleResult struct {
	ProblemID string
	Source    string // the benchmark or data source, for the per-source breakdown
	Sample    int    // index of the sample within its problem; orders maj@k's tie rule
	Answer    string // the extracted final answer, "" when none was found
	Correct   bool
	// ResponseTokens counts the response's tokens, tool responses included (the budget's measure).
	ResponseTokens int
	ToolCalls      int
	FailedCalls    int // tool calls that ended in an error, a timeout or a parse error
	Truncated      bool
}

// SummaryOptions tunes Summarize; the zero value works.
type SummaryOptions struct {
	// Normalize maps an answer to the canonical form maj@k votes on (reward.Canonical); nil votes
	// on answers as they are.
	Normalize func(string) string
	// Resamples is the number of bootstrap resamples; 0 means DefaultResamples.
	Resamples int
	// Seed seeds the bootstrap.
	Seed uint64
}

// Metrics are the numbers reported for a set of problems. Problem-level metrics weigh every
// problem alike; sample-level ones (tokens, calls, rates) weigh every sample alike. A mean over
// no samples (e.g. tokens of correct responses when none is correct) is reported as 0.
type Metrics struct {
	NProblems int `json:"n_problems"`
	NSamples  int `json:"n_samples"`
	// K is the smallest number of samples of any problem: pass@k and maj@k are reported at it.
	K int `json:"k"`
	// AvgPass1 is the mean over problems of each problem's share of correct samples.
	AvgPass1   float64    `json:"avg_pass@1"`
	AvgPass1CI [2]float64 `json:"avg_pass@1_ci95"` // 95% percentile bootstrap over problems
	PassAtK    float64    `json:"pass@k"`          // unbiased pass@K, averaged over problems
	// PassAtKCurve[i] is the unbiased pass@(i+1) averaged over problems, for i+1 = 1…K.
	PassAtKCurve []float64 `json:"pass@k_curve"`
	// MajAtK is the share of problems whose majority answer (over all their samples) is correct.
	MajAtK                      float64 `json:"maj@k"`
	NCorrect                    int     `json:"n_correct_samples"`
	MeanResponseTokens          float64 `json:"mean_response_tokens"`
	MeanResponseTokensCorrect   float64 `json:"mean_response_tokens_correct"`
	MeanResponseTokensIncorrect float64 `json:"mean_response_tokens_incorrect"`
	ToolCallsPerResponse        float64 `json:"tool_calls_per_response"`
	FailedToolCallRate          float64 `json:"failed_tool_call_rate"` // failed calls / calls
	TruncationRate              float64 `json:"truncation_rate"`       // truncated samples / samples
}

// Summary is the evaluation's report: the metrics over all problems and per source.
type Summary struct {
	Metrics
	PerSource map[string]Metrics `json:"per_source"`
}

// Summarize aggregates per-sample results. Samples are grouped by ProblemID (a problem's source is
// that of its first result) and ordered by their Sample index; each result is taken as one
// distinct sample, so the caller removes duplicates. pass@k' uses each problem's own sample count
// n (the estimator allows any n ≥ k'); maj@k votes over all of a problem's samples.
func Summarize(results []SampleResult, opts SummaryOptions) Summary {
	problems := groupByProblem(results)
	bySource := map[string][]problem{}
	for _, p := range problems {
		bySource[p.source] = append(bySource[p.source], p)
	}
	s := Summary{Metrics: measure(problems, opts), PerSource: map[string]Metrics{}}
	for source, ps := range bySource {
		s.PerSource[source] = measure(ps, opts)
	}
	return s
}

// problem is one problem's samples in Sample order.
type problem struct {
	id, source string
	samples    []SampleResult
}

func (p problem) correct() int {
	c := 0
	for _, r := range p.samples {
		if r.Correct {
			c++
		}
	}
	return c
}

// groupByProblem keeps problems in order of first appearance.
func groupByProblem(results []SampleResult) []problem {
	index := map[string]int{}
	var problems []problem
	for _, r := range results {
		i, ok := index[r.ProblemID]
		if !ok {
			i = len(problems)
			index[r.ProblemID] = i
			problems = append(problems, problem{id: r.ProblemID, source: r.Source})
		}
		problems[i].samples = append(problems[i].samples, r)
	}
	for _, p := range problems {
		slices.SortStableFunc(p.samples, func(a, b SampleResult) int { return cmp.Compare(a.Sample, b.Sample) })
	}
	return problems
}

// measure computes Metrics over a set of problems, each with at least one sample.
func measure(problems []problem, opts SummaryOptions) Metrics {
	if len(problems) == 0 {
		return Metrics{}
	}
	m := Metrics{NProblems: len(problems), K: len(problems[0].samples)}
	for _, p := range problems {
		m.K = min(m.K, len(p.samples))
	}
	m.measureProblems(problems, opts)
	m.measureSamples(problems)
	return m
}

// measureProblems fills the problem-level metrics: pass@1 and its interval, pass@k', maj@k.
func (m *Metrics) measureProblems(problems []problem, opts SummaryOptions) {
	pass1 := make([]float64, len(problems))
	m.PassAtKCurve = make([]float64, m.K)
	majority := 0
	for i, p := range problems {
		n, c := len(p.samples), p.correct()
		pass1[i] = float64(c) / float64(n)
		for k := 1; k <= m.K; k++ {
			m.PassAtKCurve[k-1] += PassAtK(n, c, k) / float64(len(problems))
		}
		if majorityCorrect(p, opts.Normalize) {
			majority++
		}
	}
	m.AvgPass1 = mean(pass1)
	m.PassAtK = m.PassAtKCurve[m.K-1]
	m.MajAtK = float64(majority) / float64(len(problems))
	resamples := cmp.Or(opts.Resamples, DefaultResamples)
	m.AvgPass1CI[0], m.AvgPass1CI[1] = BootstrapMeanCI(pass1, 0.95, resamples, opts.Seed)
}

func majorityCorrect(p problem, normalize func(string) string) bool {
	answers := make([]string, len(p.samples))
	for i, r := range p.samples {
		answers[i] = r.Answer
	}
	_, first, ok := MajorityVote(answers, normalize)
	return ok && p.samples[first].Correct
}

// measureSamples fills the sample-level metrics: tokens, tool calls, truncation.
func (m *Metrics) measureSamples(problems []problem) {
	var tokens, tokensCorrect, calls, failed, truncated int
	for _, p := range problems {
		for _, r := range p.samples {
			m.NSamples++
			tokens += r.ResponseTokens
			calls += r.ToolCalls
			failed += r.FailedCalls
			if r.Correct {
				m.NCorrect++
				tokensCorrect += r.ResponseTokens
			}
			if r.Truncated {
				truncated++
			}
		}
	}
	m.MeanResponseTokens = ratio(tokens, m.NSamples)
	m.MeanResponseTokensCorrect = ratio(tokensCorrect, m.NCorrect)
	m.MeanResponseTokensIncorrect = ratio(tokens-tokensCorrect, m.NSamples-m.NCorrect)
	m.ToolCallsPerResponse = ratio(calls, m.NSamples)
	m.FailedToolCallRate = ratio(failed, calls)
	m.TruncationRate = ratio(truncated, m.NSamples)
}

// ratio is a/b, or 0 when b is 0.
func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}
