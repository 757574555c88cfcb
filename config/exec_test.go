package config

import (
	"strings"
	"testing"
	"time"
)

func TestExecValidateNamesTheKey(t *testing.T) {
	if err := DefaultExec().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	cases := []struct {
		key  string
		edit func(*Exec)
	}{
		{"exec.workers", func(e *Exec) { e.Workers = -1 }},
		{"exec.sandbox", func(e *Exec) { e.Sandbox = "docker" }},
		{"exec.timeout", func(e *Exec) { e.Timeout = D(0) }},
		{"exec.memory_mb", func(e *Exec) { e.MemoryMB = 1 }},
		{"exec.max_processes", func(e *Exec) { e.MaxProcesses = 0 }},
		{"exec.tmp_mb", func(e *Exec) { e.TmpMB = 0 }},
		{"exec.output_chars", func(e *Exec) { e.OutputChars = 0 }},
		{"exec.session_idle", func(e *Exec) { e.SessionIdle = D(-time.Second) }},
		{"exec.sessions_per_worker", func(e *Exec) { e.SessionsPerWorker = 64 }},
		{"exec.queue_size", func(e *Exec) { e.QueueSize = 0 }},
		{"exec.python", func(e *Exec) { e.Python = "" }},
		{"exec.endpoints", func(e *Exec) { e.Endpoints = []string{"http://127.0.0.1:8090", "127.0.0.1:8091"} }},
		{"exec.endpoints", func(e *Exec) { e.Endpoints = []string{"ftp://host:21"} }},
	}
	for _, tc := range cases {
		e := DefaultExec()
		tc.edit(&e)
		err := e.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), tc.key+":") {
			t.Errorf("%s: got %v", tc.key, err)
		}
	}
}
