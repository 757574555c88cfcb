package checkpoint

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"gorstar/internal/usererr"
)

type item struct {
	I    int    `json:"i"`
	Text string `json:"text"`
}

// What Add wrote, Open reads back, in order, and appends after.
func TestLogRoundTripAndAppend(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.partial.jsonl")
	l, vals, err := Open[item](path)
	if err != nil || len(vals) != 0 {
		t.Fatalf("fresh log: %v, %v", vals, err)
	}
	for i := range 3 {
		if err := l.Add(item{i, "x\ny"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
	l, vals, err = Open[item](path)
	if err != nil {
		t.Fatal(err)
	}
	if want := []item{{0, "x\ny"}, {1, "x\ny"}, {2, "x\ny"}}; !slices.Equal(vals, want) {
		t.Fatalf("read back %v, want %v", vals, want)
	}
	if err := l.Add(item{3, "z"}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	if _, vals, _ = Open[item](path); len(vals) != 4 || vals[3] != (item{3, "z"}) {
		t.Fatalf("after appending: %v", vals)
	}
}

// A line torn by a kill (no newline, or not a whole value) is cut off, and the next value follows
// the last whole one.
func TestLogCutsATornLine(t *testing.T) {
	for name, tail := range map[string]string{
		"no newline":  `{"i":1,"te`,
		"not JSON":    "{\"i\":1,\"te\n",
		"wrong type":  "{\"i\":\"one\"}\n",
		"after a bad": "garbage\n{\"i\":2}\n",
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "log.jsonl")
			if err := os.WriteFile(path, []byte("{\"i\":0,\"text\":\"a\"}\n"+tail), 0o644); err != nil {
				t.Fatal(err)
			}
			l, vals, err := Open[item](path)
			if err != nil {
				t.Fatal(err)
			}
			if len(vals) != 1 || vals[0] != (item{0, "a"}) {
				t.Fatalf("kept %v, want the one whole line", vals)
			}
			if err := l.Add(item{I: 5}); err != nil {
				t.Fatal(err)
			}
			l.Close()
			b, _ := os.ReadFile(path)
			if want := "{\"i\":0,\"text\":\"a\"}\n{\"i\":5,\"text\":\"\"}\n"; string(b) != want {
				t.Fatalf("file %q, want %q", b, want)
			}
		})
	}
}

// Add is safe from several goroutines: every value lands on a line of its own.
func TestLogConcurrentAdds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.jsonl")
	l, _, err := Open[item](path)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 25 {
				if err := l.Add(item{g*100 + i, strings.Repeat("v", 200)}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	l.Close()
	_, vals, err := Open[item](path)
	if err != nil || len(vals) != 200 {
		t.Fatalf("read %d values (%v), want 200", len(vals), err)
	}
	seen := map[int]bool{}
	for _, v := range vals {
		seen[v.I] = true
	}
	if len(seen) != 200 {
		t.Fatalf("%d distinct values of 200", len(seen))
	}
}

type manifest struct {
	Data  string `json:"data_sha256"`
	Path  string `json:"data"`
	Inner struct {
		Samples int `json:"samples"`
	}
	Embedded
}

type Embedded struct {
	Seed int64 `json:"seed"`
}

func TestDiffNamesTheFirstField(t *testing.T) {
	a := manifest{Data: "abc", Path: "x.parquet", Embedded: Embedded{Seed: 1}}
	b := a
	if d := Diff(a, b); d != "" {
		t.Fatalf("equal manifests: %q", d)
	}
	b.Path = "y.parquet"
	if d := Diff(a, b); d != "data (was y.parquet, now x.parquet)" {
		t.Fatalf("path: %q", d)
	}
	if d := Diff(a, b, "data"); d != "" {
		t.Fatalf("an ignored field: %q", d)
	}
	b.Seed = 2
	if d := Diff(a, b, "data"); d != "seed (was 2, now 1)" {
		t.Fatalf("a field of an embedded struct counts as the outer's: %q", d)
	}
}

// Resume writes the manifest of a fresh run, resumes a run with the same settings, and refuses one
// with other settings in one user-error line naming the field, leaving the log as it was.
func TestResume(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "out.partial.jsonl")
	manPath := PartialManifest(logPath)
	if manPath != filepath.Join(dir, "out.partial.manifest.json") {
		t.Fatalf("PartialManifest = %s", manPath)
	}
	man := manifest{Data: "abc", Embedded: Embedded{Seed: 1}}
	l, vals, err := Resume[manifest, item]("eval", man, manPath, logPath)
	if err != nil || len(vals) != 0 {
		t.Fatalf("fresh: %v %v", vals, err)
	}
	l.Add(item{I: 7})
	l.Close()
	var got manifest
	if err := ReadManifest(manPath, &got); err != nil || got != man {
		t.Fatalf("manifest written: %+v, %v", got, err)
	}

	l, vals, err = Resume[manifest, item]("eval", man, manPath, logPath)
	if err != nil || len(vals) != 1 || vals[0].I != 7 {
		t.Fatalf("resume: %v %v", vals, err)
	}
	l.Close()

	other := man
	other.Seed = 2
	_, _, err = Resume[manifest, item]("eval", other, manPath, logPath)
	if !usererr.Is(err) || err.Error() != "eval: cannot resume "+logPath+": it was started with another seed (was 1, now 2); "+
		"use another --out, or delete "+logPath+" to start over" {
		t.Fatalf("other settings: %v", err)
	}
	if _, vals, _ = Open[item](logPath); len(vals) != 1 {
		t.Fatalf("a refused resume changed the log: %v", vals)
	}

	// A log without its manifest (a run killed between the two) takes this run's.
	os.Remove(manPath)
	l, vals, err = Resume[manifest, item]("eval", other, manPath, logPath)
	if err != nil || len(vals) != 1 {
		t.Fatalf("log without a manifest: %v %v", vals, err)
	}
	l.Close()
	if err := ReadManifest(manPath, &got); err != nil || got != other {
		t.Fatalf("manifest rewritten: %+v, %v", got, err)
	}

	// A manifest that is not JSON is one user-error line.
	os.WriteFile(manPath, []byte("{"), 0o644)
	if _, _, err := Resume[manifest, item]("eval", man, manPath, logPath); !usererr.Is(err) || !strings.Contains(err.Error(), "not a manifest") {
		t.Fatalf("bad manifest: %v", err)
	}

	if err := Remove(logPath); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{logPath, manPath} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still there after Remove: %v", p, err)
		}
	}
	if err := Remove(logPath); err != nil {
		t.Fatalf("Remove of what is gone already: %v", err)
	}
}

func TestHashes(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	sum := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	a, b := write("a", "hello "), write("b", "world")
	if got, err := FileSHA256(a, b); err != nil || got != sum("hello world") {
		t.Fatalf("FileSHA256 = %s, %v; want the hash of the files as one stream", got, err)
	}
	if _, err := FileSHA256(filepath.Join(dir, "absent")); err == nil {
		t.Fatal("FileSHA256 of a missing file: no error")
	}
	m := filepath.Join(dir, "m")
	os.Mkdir(m, 0o755)
	os.WriteFile(filepath.Join(m, "config.json"), []byte("{}"), 0o644)
	os.WriteFile(filepath.Join(m, "model-2.safetensors"), []byte("B"), 0o644)
	os.WriteFile(filepath.Join(m, "model-1.safetensors"), []byte("A"), 0o644)
	os.WriteFile(filepath.Join(m, "README.md"), []byte("not hashed"), 0o644)
	if got, err := ModelSHA256(m); err != nil || got != sum("{}AB") {
		t.Fatalf("ModelSHA256 = %s, %v; want config.json then the safetensors in name order", got, err)
	}
	if IDsSHA256([]int32{1, 23}) != sum("1,23,") || IDsSHA256([]int32{12, 3}) == IDsSHA256([]int32{1, 23}) {
		t.Fatal("IDsSHA256 does not separate its ids")
	}
}
