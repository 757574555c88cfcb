package chat

import (
	"gorstar/internal/testmodel"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gorstar/internal/testenv"
	"gorstar/internal/usererr"
	"gorstar/tokenizer"
)

func TestLoadTemplate(t *testing.T) {
	if names := TemplateNames(); !slices.Equal(names, []string{"chatml", "compact", "rstar2"}) {
		t.Fatalf("TemplateNames = %v", names)
	}
	def, err := LoadTemplate("")
	if err != nil || def.Name != DefaultTemplate {
		t.Fatalf("default template: %v, %v", def, err)
	}
	_, err = LoadTemplate("nope")
	if err == nil || !usererr.Is(err) || !strings.Contains(err.Error(), "chatml, compact, rstar2") {
		t.Fatalf("unknown template: %v", err)
	}
	dir := t.TempDir()
	good := filepath.Join(dir, "mine.tmpl")
	os.WriteFile(good, []byte("{{range .Messages}}<|im_start|>{{.Role}}\n{{gen_begin}}{{text .Content}}<|im_end|>{{gen_end}}\n{{end}}"), 0o644)
	tmpl, err := LoadTemplate(good)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRenderer(testmodel.Tokenizer(t), Options{Template: tmpl})
	if err != nil {
		t.Fatal(err)
	}
	if _, mask, err := r.Render([]Message{{Role: RoleUser, Content: "x"}}); err != nil || !mask[len(mask)-2] {
		t.Fatalf("custom template: %v %v", mask, err)
	}

	broken := filepath.Join(dir, "broken.tmpl")
	os.WriteFile(broken, []byte("{{range .Messages}"), 0o644)
	if _, err := LoadTemplate(broken); err == nil || !usererr.Is(err) {
		t.Fatalf("broken template: %v", err)
	}
	// A template without an end-of-turn inside gen_begin … gen_end cannot drive generation.
	noGen, _ := ParseTemplate("nogen", "{{range .Messages}}{{text .Content}}{{end}}")
	if _, err := NewRenderer(testmodel.Tokenizer(t), Options{Template: noGen}); err == nil {
		t.Fatal("NewRenderer accepted a template without gen markers")
	}
	unbalanced, _ := ParseTemplate("unbalanced", "{{gen_begin}}{{gen_begin}}")
	if _, err := unbalanced.execute(TemplateData{}); err == nil {
		t.Fatal("nested gen_begin accepted")
	}
	missing, _ := ParseTemplate("missing", "{{.Nope}}")
	if _, err := missing.execute(TemplateData{}); err == nil {
		t.Fatal("unknown field accepted")
	}
}

// With Qwen3's real vocabulary, Render gives the ids Hugging Face would give for the rendered text
// (encoded as a whole), as long as no message starts with whitespace that could merge with the
// header's newline.
func TestRenderMatchesWholeTextEncodingQwen3(t *testing.T) {
	tok := qwen3Tokenizer(t)
	for name, r := range builtinRenderers(t, tok) {
		conv := sampleConversation()
		ids, mask, err := r.Render(conv)
		if err != nil {
			t.Fatal(err)
		}
		text, _ := r.Text(conv, false)
		if want := tok.Encode(text); !slices.Equal(ids, want) {
			t.Errorf("%s: Render ids differ from Encode(Text):\n%v\n%v", name, ids, want)
		}
		if !slices.Contains(mask, true) {
			t.Errorf("%s: empty mask", name)
		}
		// A turn of weight 0 keeps the ids of its stretch as generation produced them, even where
		// encoding it with the header would merge (a leading newline).
		conv = recoveryConversation(nil)
		conv[1].Content = "\n" + conv[1].Content
		plain, _, err := r.Render(conv)
		if err != nil {
			t.Fatal(err)
		}
		conv[1].Weight = Weight(0)
		if weighted, _, err := r.Render(conv); err != nil || !slices.Equal(weighted, plain) {
			t.Errorf("%s: weight 0 changed the ids (%v):\n%v\n%v", name, err, weighted, plain)
		}
	}
}

// qwen3Tokenizer loads Qwen3's tokenizer.json (internal/testenv finds it), or skips.
func qwen3Tokenizer(t *testing.T) *tokenizer.Tokenizer {
	t.Helper()
	tok, err := tokenizer.LoadFile(testenv.Qwen3Tokenizer(t))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}
