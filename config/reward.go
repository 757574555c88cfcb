package config

// Reward configures answer grading (package reward).
type Reward struct {
	Mode string `toml:"mode" comment:"strict (default) or rstar2: the public release's leniencies (box anywhere, tool output included, ×100/÷100 and 1e-4 relative error, truncation ignored), for comparison with published numbers."`
}

// DefaultReward grades strictly, as gorstar trains.
func DefaultReward() Reward { return Reward{Mode: "strict"} }

// Validate checks the mode name.
func (r Reward) Validate() error { return oneOf("reward.mode", r.Mode, "strict", "rstar2") }
