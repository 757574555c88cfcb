package sft

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gorstar/internal/usererr"
	"gorstar/model"
)

// Every bad run is one line naming what is wrong, and leaves --out as it found it.
func TestRunRefusesBadSetups(t *testing.T) {
	tiny := tinyModelDir(t, 1)
	conv := synthConversations(t, 4, 2, "c.jsonl")
	base := Options{Model: tiny, Data: conv, Template: "chatml", Config: testConfig(), Seed: 1}
	base.Config.Epochs, base.Config.EvalFraction = 1, 0 // one step

	done := base
	done.Out = filepath.Join(t.TempDir(), "done")
	if _, err := Run(context.Background(), done); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, []byte("x"), 0o644)
	other := otherShapeDir(t, tiny)
	moreData := synthConversations(t, 5, 2, "d.jsonl")

	for _, tc := range []struct {
		name string
		edit func(o *Options)
		want string
	}{
		{"out is a file", func(o *Options) { o.Out = file }, "is a file"},
		{"resume without checkpoint", func(o *Options) { o.Out, o.Resume = filepath.Join(t.TempDir(), "empty"), true }, "no complete checkpoint"},
		{"fresh run over checkpoints", func(o *Options) { o.Out = done.Out }, "pass --resume"},
		{"resume another shape", func(o *Options) { o.Out, o.Resume, o.Model = done.Out, true, other }, "checkpoint shape"},
		{"resume other data", func(o *Options) { o.Out, o.Resume, o.Data = done.Out, true, moreData }, "differ from the run"},
		{"bad setting", func(o *Options) { o.Out, o.Config.Overlong = filepath.Join(t.TempDir(), "x"), "wrap" }, "sft.overlong"},
		{"missing data", func(o *Options) {
			o.Out, o.Data = filepath.Join(t.TempDir(), "x"), filepath.Join(t.TempDir(), "none.jsonl")
		}, "none.jsonl"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := base
			tc.edit(&o)
			before := listing(t, o.Out)
			_, err := Run(context.Background(), o)
			if !usererr.Is(err) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("got %v, want a one-line user error containing %q", err, tc.want)
			}
			if after := listing(t, o.Out); after != before {
				t.Errorf("--out changed:\n%s\nwas\n%s", after, before)
			}
		})
	}
}

// otherShapeDir writes a model like the one in dir but with fewer layers.
func otherShapeDir(t *testing.T, dir string) string {
	m, err := model.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	c := m.Config
	c.NumHiddenLayers = 2
	small, err := model.New(c, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer small.Close()
	small.Files = m.Files
	out := filepath.Join(t.TempDir(), "two-layers")
	if err := small.Save(out); err != nil {
		t.Fatal(err)
	}
	return out
}

// listing names every file under dir with its size ("" when dir does not exist).
func listing(t *testing.T, dir string) string {
	var b strings.Builder
	filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err == nil {
			fmt.Fprintf(&b, "%s %d %s\n", path, info.Size(), info.ModTime())
		}
		return nil
	})
	return b.String()
}
