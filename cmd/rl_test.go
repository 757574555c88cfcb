package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gorstar/internal/testmodel"
)

// gorstar rl refuses bad inputs with one line and exit status 1, before writing anything.
func TestRLRefusesBadInputs(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, []byte("x"), 0o644)
	problems := filepath.Join(dir, "p.jsonl")
	os.WriteFile(problems, []byte(`{"id": "a", "problem": "Compute 2 * 3.", "answer": "6"}`+"\n"), 0o644)
	tiny := testmodel.TinyDir(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"rl", "--model", filepath.Join(dir, "none"), "--out", filepath.Join(dir, "o1")}, "no data"},
		{[]string{"rl", "--model", dir, "--data", file, "--out", file}, "is a file"},
		{[]string{"rl", "--model", dir, "--out", filepath.Join(dir, "o2"), "--set", "rl.group_size=1"}, "rl.group_size"},
		{[]string{"rl", "--model", dir, "--out", filepath.Join(dir, "o3"), "--data", problems, "--resume"}, "no complete checkpoint"},
		{[]string{"rl", "--model", dir, "--out", filepath.Join(dir, "o4"), "--data", problems, "--endpoint", "http://127.0.0.1:1"}, "http://127.0.0.1:1"},
		{[]string{"rl", "--model", dir, "--out", filepath.Join(dir, "o5"), "--data", problems, "--served-model", "x"}, "--served-model needs --endpoint"},
		{[]string{"rl", "--model", tiny, "--out", filepath.Join(dir, "o6"), "--data", problems, "--set", `exec.endpoints=["http://127.0.0.1:1"]`},
			"exec.endpoints: none of the 1 servers answers (http://127.0.0.1:1"},
	} {
		r := runCLI(t, append(c.args, "--threads", "1")...)
		if r.Code != 1 || !strings.Contains(r.Stderr, c.want) || strings.Count(strings.TrimSpace(r.Stderr), "\n") > 0 {
			t.Errorf("%v: exit %d, stderr %q; want 1 and one line about %q", c.args, r.Code, r.Stderr, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "o1")); !os.IsNotExist(err) {
		t.Errorf("a refused run created its --out")
	}
}
