package outpath

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gorstar/internal/usererr"
)

func TestFileAndDirRules(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "in.jsonl")
	os.WriteFile(file, []byte("x"), 0o644)
	full := filepath.Join(dir, "full")
	os.MkdirAll(filepath.Join(full, "sub"), 0o755)
	empty := filepath.Join(dir, "empty")
	os.Mkdir(empty, 0o755)
	link := filepath.Join(dir, "link.jsonl")
	os.Symlink(file, link)
	fresh := filepath.Join(dir, "new", "out.jsonl")
	cases := []struct {
		name string
		err  error
		want string // "" = allowed
	}{
		{"file: new path", File("--out", fresh, file), ""},
		{"file: replaces a file", File("--out", file), ""},
		{"file: stdout", File("--out", "-", "-"), ""},
		{"file: same as input", File("--out", file, file), "is also an input"},
		{"file: same through a link", File("--out", link, file), "is also an input"},
		{"file: same through ./", File("--out", filepath.Join(dir, ".", "in.jsonl"), file), "is also an input"},
		{"file: onto a directory", File("--out", empty), "is a directory"},
		{"file: below a file", File("--out", filepath.Join(file, "x.jsonl")), "is a file, not a directory"},
		{"dir: new", Dir("--out", filepath.Join(dir, "m"), false), ""},
		{"dir: empty", Dir("--out", empty, false), ""},
		{"dir: non-empty", Dir("--out", full, false), "not empty (pass --force"},
		{"dir: non-empty forced", Dir("--out", full, true), ""},
		{"dir: onto a file", Dir("--out", file, false), "is a file, not a directory (pass --force"},
		{"dir: holds an input", Dir("--out", full, true, filepath.Join(full, "sub")), "holds the input"},
		{"dir: current directory", Dir("--out", ".", true), "current directory"},
		{"dir: above the current directory", Dir("--out", "..", true), "current directory"},
	}
	for _, c := range cases {
		switch {
		case c.want == "" && c.err != nil:
			t.Errorf("%s: refused: %v", c.name, c.err)
		case c.want != "" && (c.err == nil || !strings.Contains(c.err.Error(), c.want) || !usererr.Is(c.err)):
			t.Errorf("%s: got %v, want a user error with %q", c.name, c.err, c.want)
		}
	}
}
