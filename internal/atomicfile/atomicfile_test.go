package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestFailedWriteLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "out.parquet")
	os.WriteFile(target, []byte("old"), 0o644)
	err := Write(target, func(w io.Writer) error {
		w.Write([]byte("half"))
		return errors.New("boom")
	})
	if err == nil {
		t.Fatal("want the fill error")
	}
	got, _ := os.ReadFile(target)
	entries, _ := os.ReadDir(dir)
	if string(got) != "old" || len(entries) != 1 {
		t.Fatalf("target %q, dir has %d entries", got, len(entries))
	}
	if err := WriteBytes(target, []byte("new")); err != nil {
		t.Fatal(err)
	}
	got, _ = os.ReadFile(target)
	if string(got) != "new" {
		t.Fatalf("got %q", got)
	}
}

func TestWriteDirReplacesWhole(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "model")
	fill := func(name string) func(string) error {
		return func(d string) error { return os.WriteFile(filepath.Join(d, name), []byte(name), 0o644) }
	}
	if err := WriteDir(dir, fill("a")); err != nil {
		t.Fatal(err)
	}
	if err := WriteDir(dir, func(d string) error { fill("b")(d); return errors.New("boom") }); err == nil {
		t.Fatal("want error")
	}
	if _, err := os.Stat(filepath.Join(dir, "a")); err != nil {
		t.Fatal("failed WriteDir damaged the old directory")
	}
	if err := WriteDir(dir, fill("b")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a")); err == nil {
		t.Fatal("old content survived a replace")
	}
	entries, _ := os.ReadDir(filepath.Dir(dir))
	if len(entries) != 1 {
		t.Fatalf("leftovers next to the directory: %v", entries)
	}
}
