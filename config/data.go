package config

// Data names the pipeline's datasets. (Owned by the data package's author: extend freely.)
type Data struct {
	Train string `toml:"train" comment:"Training problems (Parquet or JSONL); empty = synthesize with [data.synth]."`
	Eval  string `toml:"eval" comment:"Evaluation problems; empty = a held-out synthetic split."`
}

func DefaultData() Data { return Data{} }

func (d Data) Validate() error { return nil }
