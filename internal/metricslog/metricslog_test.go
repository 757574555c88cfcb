package metricslog

import (
	"os"
	"path/filepath"
	"testing"
)

// Open keeps the lines up to the resumed step, drops later and cut lines, and appends after them.
func TestOpenKeepsLinesUpToStep(t *testing.T) {
	old := `{"step":1,"loss":2}` + "\n" + `{"step":2,"loss":1}` + "\n" + `{"step":3,"loss":0.5}` + "\n" + `{"step":4,"lo`
	for _, tc := range []struct {
		name string
		upTo int
		want string
	}{
		{"fresh run", -1, `{"step":9}` + "\n"},
		{"resume at 0", 0, `{"step":9}` + "\n"},
		{"resume at 2", 2, `{"step":1,"loss":2}` + "\n" + `{"step":2,"loss":1}` + "\n" + `{"step":9}` + "\n"},
		{"resume past the end", 10, `{"step":1,"loss":2}` + "\n" + `{"step":2,"loss":1}` + "\n" + `{"step":3,"loss":0.5}` + "\n" + `{"step":9}` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, FileName)
			if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
				t.Fatal(err)
			}
			l, err := Open(dir, tc.upTo)
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Write(map[string]int{"step": 9}); err != nil {
				t.Fatal(err)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("metrics.jsonl = %q, want %q", got, tc.want)
			}
		})
	}
}

// Open creates the directory and the file when neither exists.
func TestOpenCreatesMissingDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run", "out")
	l, err := Open(dir, 3)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Write(struct {
		Step int `json:"step"`
	}{1}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	got, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil || string(got) != `{"step":1}`+"\n" {
		t.Errorf("metrics.jsonl = %q, %v", got, err)
	}
}
