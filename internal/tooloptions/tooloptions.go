// Package tooloptions converts the configuration's [exec] section (config.Exec, the TOML schema)
// into the options of the Python tool (pytool.Options), so that pytool stays a library that never
// imports config. The command line and the stages (rollout, rl, eval, train) convert here and
// nowhere else.
package tooloptions

import (
	"slices"

	"gorstar/config"
	"gorstar/pytool"
)

// From returns the tool options the [exec] keys of e set.
func From(e config.Exec) pytool.Options {
	return pytool.Options{
		Workers:           e.Workers,
		Python:            e.Python,
		Modules:           slices.Clone(e.Modules),
		Sandbox:           e.Sandbox,
		Timeout:           e.Timeout.Duration,
		MemoryMB:          e.MemoryMB,
		CPUSeconds:        e.CPUSeconds,
		MaxProcesses:      e.MaxProcesses,
		MaxFileMB:         e.MaxFileMB,
		TmpMB:             e.TmpMB,
		OutputChars:       e.OutputChars,
		MaxOutputBytes:    e.MaxOutputBytes,
		SessionIdle:       e.SessionIdle.Duration,
		SessionsPerWorker: e.SessionsPerWorker,
		QueueSize:         e.QueueSize,
		Endpoints:         slices.Clone(e.Endpoints),
		Priority:          e.Priority,
	}
}
