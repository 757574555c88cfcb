package config

// Reward configures answer grading. (Owned by the reward package's author: extend freely.)
type Reward struct {
	Mode string `toml:"mode" comment:"strict (default) or rstar2 (the public release's leniencies, for comparison)."`
}

func DefaultReward() Reward { return Reward{Mode: "strict"} }

func (r Reward) Validate() error { return oneOf("reward.mode", r.Mode, "strict", "rstar2") }
