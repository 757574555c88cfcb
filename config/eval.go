package config

// Eval configures evaluation: average pass@1 over Samples per problem.
type Eval struct {
	Samples     int     `toml:"samples" comment:"Samples per problem, k (rStar2: 16)."`
	Temperature float64 `toml:"temperature" comment:"Sampling temperature (rStar2: 0.6)."`
	MaxTurns    int     `toml:"max_turns" comment:"Most assistant turns (rStar2: 30)."`
	MaxTokens   int     `toml:"max_tokens" comment:"Response budget in tokens (rStar2: 30K)."`
	Limit       int     `toml:"limit" comment:"Evaluate only the first N problems (0 = all)."`
}

func DefaultEval() Eval {
	return Eval{Samples: 4, Temperature: 0.6, MaxTurns: 4, MaxTokens: 512, Limit: 50}
}

func (e Eval) Validate() error {
	return firstError(
		atLeast("eval.samples", e.Samples, 1),
		between("eval.temperature", e.Temperature, 0, 10),
		atLeast("eval.max_turns", e.MaxTurns, 1),
		atLeast("eval.max_tokens", e.MaxTokens, 8),
		atLeast("eval.limit", e.Limit, 0),
	)
}
