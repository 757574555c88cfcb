package config

import "fmt"

// Eval configures evaluation: average pass@1 over Samples per problem.
type Eval struct {
	Samples           int     `toml:"samples" comment:"Samples per problem, k (rStar2: 16)."`
	Temperature       float64 `toml:"temperature" comment:"Sampling temperature (rStar2: 0.6)."`
	MaxTurns          int     `toml:"max_turns" comment:"Most assistant turns (rStar2: 30)."`
	MaxResponseTokens int     `toml:"max_response_tokens" comment:"Response budget in tokens, tool responses included (rStar2: 30K)."`
	Limit             int     `toml:"limit" comment:"Evaluate only the first N problems (0 = all)."`
	// Sets are benchmarks evaluated together, one row each in the results (the paper's table).
	Sets []EvalSet `toml:"sets" comment:"Benchmarks evaluated together, one row each ([[eval.sets]] name, data): gorstar eval without --data, and the held-out problems of gorstar train when data.eval is empty."`

	// Deprecated: the response budget is eval.max_response_tokens.
	MaxTokens *int `toml:"max_tokens,omitempty" renamed:"eval.max_response_tokens"`
}

// EvalSet is one benchmark: a name for its row and the file holding it (any layout data import
// reads: a problems table, the public sets as published).
type EvalSet struct {
	Name string `toml:"name" comment:"The set's name in the results (default: the file's)."`
	Data string `toml:"data" comment:"The set's problems file."`
}

func DefaultEval() Eval {
	return Eval{Samples: 4, Temperature: 0.6, MaxTurns: 4, MaxResponseTokens: 512, Limit: 50}
}

func (e Eval) Validate() error {
	return firstError(
		atLeast("eval.samples", e.Samples, 1),
		between("eval.temperature", e.Temperature, 0, 10),
		atLeast("eval.max_turns", e.MaxTurns, 1),
		atLeast("eval.max_response_tokens", e.MaxResponseTokens, 8),
		atLeast("eval.limit", e.Limit, 0),
		e.validateSets(),
	)
}

func (e Eval) validateSets() error {
	seen := map[string]bool{}
	for i, s := range e.Sets {
		if s.Data == "" {
			return keyErrorf(fmt.Sprintf("eval.sets.%d.data", i), "the set's problems file is required")
		}
		if s.Name != "" && seen[s.Name] {
			return keyErrorf(fmt.Sprintf("eval.sets.%d.name", i), "%q names two sets; set names must differ", s.Name)
		}
		seen[s.Name] = true
	}
	return nil
}
