package config

// Model is the policy model. (Owned by the model package's author: extend freely.)
type Model struct {
	Path   string `toml:"path" comment:"Hugging Face model directory to start from; empty = init from preset."`
	Preset string `toml:"preset" comment:"Random-init preset when path is empty: tiny or small."`
}

func DefaultModel() Model { return Model{Preset: "tiny"} }

func (m Model) Validate() error {
	if m.Path == "" {
		return oneOf("model.preset", m.Preset, "tiny", "small")
	}
	return nil
}
