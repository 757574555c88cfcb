package data

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// benchJSONL writes n problems of a few hundred characters (like public math datasets) as JSONL.
func benchJSONL(b *testing.B, n int) string {
	b.Helper()
	words := strings.Fields("let find the value of such that triangle circle integer positive real number sum product " +
		"points area radius probability sequence function remainder divided digits prime square polynomial roots")
	path := filepath.Join(b.TempDir(), "problems.jsonl")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < n; i++ {
		var text strings.Builder
		for j := 0; j < 20+rng.IntN(50); j++ {
			text.WriteString(words[rng.IntN(len(words))] + " ")
		}
		fmt.Fprintf(&text, `$\frac{%d}{%d}$?`, rng.IntN(999), 1+rng.IntN(999))
		line, _ := json.Marshal(map[string]any{"id": fmt.Sprint("b", i), "problem": text.String(),
			"answer": fmt.Sprint(rng.IntN(1000000)), "source": "bench", "level": rng.IntN(5), "tags": []string{"a", "b"}})
		w.Write(line)
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	return path
}

const benchRows = 20000

// BenchmarkImportJSONL imports JSONL problems into Parquet; compare rows/s with
// BenchmarkDecodeJSONLBaseline (reading and parsing the same lines, nothing else) for the ratio.
func BenchmarkImportJSONL(b *testing.B) {
	in := benchJSONL(b, benchRows)
	out := filepath.Join(b.TempDir(), "out.parquet")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Import(context.Background(), ImportOptions{Inputs: []string{in}, Out: out}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(benchRows*b.N)/b.Elapsed().Seconds(), "rows/s")
}

func BenchmarkDecodeJSONLBaseline(b *testing.B) {
	in := benchJSONL(b, benchRows)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f, err := os.Open(in)
		if err != nil {
			b.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), maxLineBytes)
		for sc.Scan() {
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(sc.Bytes(), &obj); err != nil {
				b.Fatal(err)
			}
		}
		f.Close()
	}
	b.ReportMetric(float64(benchRows*b.N)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkReadProblemsParquet streams a problems table back.
func BenchmarkReadProblemsParquet(b *testing.B) {
	in := benchJSONL(b, benchRows)
	pq := filepath.Join(b.TempDir(), "p.parquet")
	if _, err := Import(context.Background(), ImportOptions{Inputs: []string{in}, Out: pq}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ps, err := ReadAllProblems(pq)
		if err != nil || len(ps) != benchRows {
			b.Fatal(len(ps), err)
		}
	}
	b.ReportMetric(float64(benchRows*b.N)/b.Elapsed().Seconds(), "rows/s")
}
