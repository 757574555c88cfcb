package config

// Rollout configures multi-turn tool-calling rollouts.
type Rollout struct {
	Template      string   `toml:"template" comment:"Chat template: a built-in name (compact, rstar2, chatml) or a file path; SFT, RL, eval and serve must use the same one."`
	MaxTurns      int      `toml:"max_turns" comment:"Most assistant turns per rollout (a tool call in the last one is not run)."`
	ToolTextChars int      `toml:"tool_text_chars" comment:"Tool output shown to the model is cut to this many characters (head + marker + tail)."`
	Temperature   float64  `toml:"temperature" comment:"Sampling temperature of RL rollouts."`
	TopP          float64  `toml:"top_p" comment:"Nucleus sampling mass (1 = off)."`
	Endpoints     []string `toml:"endpoints" comment:"OpenAI-compatible servers (vLLM, SGLang, gorstar serve) to roll out on; empty = the in-process engine."`
	WeightHook    []string `toml:"weight_hook" comment:"With rollout.endpoints, for servers without /update_weights_from_disk (vLLM): the command and its arguments, run once per server after each weight push (before the first rollout and after every RL step) with GORSTAR_ENDPOINT, GORSTAR_WEIGHTS_DIR and GORSTAR_WEIGHT_VERSION in its environment; exit status 0 means the server now serves those weights. Empty: such a server fails the push."`
	ToolSessions  bool     `toml:"tool_sessions" comment:"Run a trajectory's tool calls in one live interpreter, like notebook cells (variables, imports and files carry over); false (rStar2) runs each call in a fresh process. Keep exec.sessions_per_worker × workers at least the trajectories in flight."`
}

func DefaultRollout() Rollout {
	return Rollout{Template: "compact", MaxTurns: 10, ToolTextChars: 256, Temperature: 1.0, TopP: 1.0}
}

func (r Rollout) Validate() error {
	return firstError(
		atLeast("rollout.max_turns", r.MaxTurns, 1),
		atLeast("rollout.tool_text_chars", r.ToolTextChars, 16),
		between("rollout.temperature", r.Temperature, 0, 10),
		between("rollout.top_p", r.TopP, 1e-6, 1),
	)
}
