package config

// Exec configures the sandboxed Python tool. (Owned by the exec package's author: extend freely.)
type Exec struct {
	Workers int `toml:"workers" comment:"Warm Python workers (0 = 2 per core)."`
}

func DefaultExec() Exec { return Exec{} }

func (e Exec) Validate() error { return atLeast("exec.workers", e.Workers, 0) }
