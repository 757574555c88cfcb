package rollout

// FinishReason says why a trajectory ended.
type FinishReason string

const (
	FinishAnswer    FinishReason = "answer"    // a turn without a tool call that holds an <answer>
	FinishNoCall    FinishReason = "no_call"   // a turn without a tool call and without an <answer>
	FinishMaxTurns  FinishReason = "max_turns" // the last allowed turn made a call (not run)
	FinishTruncated FinishReason = "truncated" // the response budget ran out (reward 0)
	FinishError     FinishReason = "error"     // the backend failed (Error says why)
)

// Trajectory is one rollout, token in, token out: ResponseIDs are exactly the ids the policy
// generated and the ids appended after its turns, in order, never re-tokenized.
type Trajectory struct {
	ProblemID    string `json:"problem_id"`
	ProblemIndex int    `json:"problem_index"` // in the Run call's problems
	Sample       int    `json:"sample"`        // within the problem's group
	Seed         uint64 `json:"seed"`
	// WeightVersion is the version of the weights that generated the first turn.
	WeightVersion int64 `json:"weight_version"`

	PromptIDs   []int32 `json:"prompt_ids"`
	ResponseIDs []int32 `json:"response_ids"`
	// LossMask is true on the ids the policy generated, false on the appended ones.
	LossMask []bool `json:"loss_mask"`
	// LogProbs holds, per response id, the policy's log-probability of a generated id (0 on
	// appended ids).
	LogProbs []float32 `json:"logprobs"`

	Turns []TurnRecord `json:"turns"`
	// Text is the decoded response: the model's turns with the tool turns between them.
	Text   string       `json:"text"`
	Finish FinishReason `json:"finish"`
	Error  string       `json:"error,omitempty"`

	NumTurns  int `json:"num_turns"`
	ToolCalls int `json:"tool_calls"` // calls answered: run, or refused with a parse error
	// FailedToolCalls are the model's fault: parse errors and calls ending in error, timeout,
	// memory or output_limit (GRPO-RoC's p_err).
	FailedToolCalls int `json:"failed_tool_calls"`
	// InternalToolErrors are sandbox failures, not the model's: RL should roll such a trajectory
	// again rather than learn from it.
	InternalToolErrors int `json:"internal_tool_errors"`
	AnswerTags         int `json:"answer_tags"` // <answer> tags in the model's own text
	GeneratedTokens    int `json:"generated_tokens"`
	// UsageTokens is, in text mode (TextLoop: no ids), the response's length in tokens as the
	// server's usage counts it: the prompt's growth over the turns plus the last completion.
	UsageTokens int `json:"usage_tokens,omitempty"`

	Reward    float64 `json:"reward"`
	Correct   bool    `json:"correct"`
	Extracted string  `json:"extracted"` // the final answer the grader found

	DurationMS float64 `json:"duration_ms"`
	// ToolWaitMS is the time the trajectory spent paused between a turn and its resumption.
	ToolWaitMS float64 `json:"tool_wait_ms"`
}

// TurnRecord describes one assistant turn and the tool call it made, if any.
type TurnRecord struct {
	Tokens int `json:"tokens"` // generated in this turn
	// Code and Input are the call's arguments; Status is the sandbox's verdict ("ok", "error", …),
	// "parse_error" for a malformed call, "not_run" for a call in the last turn, "" without a call.
	Code       string  `json:"code,omitempty"`
	Input      string  `json:"input,omitempty"`
	Status     string  `json:"status,omitempty"`
	DurationMS float64 `json:"duration_ms,omitempty"`
	ParseError string  `json:"parse_error,omitempty"`
	// ToolText is what the model was shown inside <tool_response>.
	ToolText string `json:"tool_text,omitempty"`
}

// Statuses of a turn's call besides the sandbox's own.
const (
	StatusParseError = "parse_error"
	StatusNotRun     = "not_run"
)

// WellFormed says the trajectory is in the format SFT teaches, whatever its answer: every tool call
// it made parsed (a known tool, JSON arguments, code given), and it ended either with an
// <answer> holding a \boxed{} the grader could read, or at the turn limit still calling the tool.
// A truncated trajectory is not well formed.
func (t *Trajectory) WellFormed() bool {
	for _, rec := range t.Turns {
		if rec.Status == StatusParseError {
			return false
		}
	}
	switch t.Finish {
	case FinishAnswer:
		return t.Extracted != ""
	case FinishMaxTurns:
		return true
	}
	return false
}
