package data

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A gzip file cut short or damaged is reported as such, with how much was read, not as invalid
// JSON in the record the cut happened to fall in; an intact one reads in full.
func TestGzipDamageNamed(t *testing.T) {
	var lines, array bytes.Buffer
	array.WriteString("[")
	for i := range 300 {
		rec := fmt.Sprintf(`{"problem": "What is %d + %d?", "answer": "%d"}`, i, i, 2*i)
		lines.WriteString(rec + "\n")
		if i > 0 {
			array.WriteString(",")
		}
		array.WriteString(rec)
	}
	array.WriteString("]")
	gz := func(b []byte) []byte {
		var out bytes.Buffer
		w := gzip.NewWriter(&out)
		w.Write(b)
		w.Close()
		return out.Bytes()
	}
	jsonl, jsonArr := gz(lines.Bytes()), gz(array.Bytes())
	corrupt := bytes.Clone(jsonl)
	corrupt[len(corrupt)-6] ^= 0xff // in the CRC-32 of the trailer
	dir := t.TempDir()
	cases := []struct {
		name string
		data []byte
		want string // "" = reads 300 problems
	}{
		{"p.jsonl.gz", jsonl, ""},
		{"p.json.gz", jsonArr, ""},
		{"head.jsonl.gz", jsonl[:40], "head.jsonl.gz: truncated gzip stream: the file ends after 0 complete lines"},
		{"middle.jsonl.gz", jsonl[:len(jsonl)/2], "middle.jsonl.gz: truncated gzip stream: the file ends after "},
		{"trailer.jsonl.gz", jsonl[:len(jsonl)-4], "trailer.jsonl.gz: truncated gzip stream: the file ends after 300 complete lines"},
		{"crc.jsonl.gz", corrupt, "crc.jsonl.gz: corrupt gzip stream after 300 complete lines"},
		{"middle.json.gz", jsonArr[:len(jsonArr)/2], "middle.json.gz: truncated gzip stream: the file ends after "},
		{"trailer.json.gz", jsonArr[:len(jsonArr)-4], "trailer.json.gz: truncated gzip stream: the file ends after 300 complete elements"},
	}
	for _, c := range cases {
		p := filepath.Join(dir, c.name)
		if err := os.WriteFile(p, c.data, 0o644); err != nil {
			t.Fatal(err)
		}
		res, err := Import(context.Background(), ImportOptions{Inputs: []string{p}, Out: filepath.Join(dir, "out.parquet")})
		if c.want == "" {
			if err != nil || res.Rows != 300 {
				t.Errorf("%s: %d rows, %v", c.name, res.Rows, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "invalid JSON") {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}
