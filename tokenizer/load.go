package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"gorstar/internal/usererr"
)

// Tokenizer encodes text to ids and back. Build one with Load, LoadFile or Parse.
type Tokenizer struct {
	tokens      []string // id → vocabulary string (byte-level characters, or an added token's content)
	vocab       map[string]int32
	added       []AddedToken // sorted longest content first, for matching
	addedByID   map[int32]AddedToken
	addedByText map[string]int32
	matcher     addedMatcher
	normalize   normalizer
	pretokenize pretokenizer
	bpe         bpeModel
	special     []bool      // by id: an added token marked special
	kind        []tokenKind // by id
	tokenBytes  byteTable
}

// tokenKind tells what an id is; ids may have holes.
type tokenKind uint8

const (
	noToken tokenKind = iota
	vocabToken
	addedToken
)

// Load reads DIR/tokenizer.json.
func Load(dir string) (*Tokenizer, error) {
	return LoadFile(filepath.Join(dir, "tokenizer.json"))
}

// LoadFile reads a tokenizer.json file. Problems with the file's content are user errors naming
// the file.
func LoadFile(path string) (*Tokenizer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, usererr.New("%s: no such tokenizer file", path)
		}
		return nil, fmt.Errorf("read tokenizer %s: %w", path, err)
	}
	t, err := Parse(data)
	if err != nil {
		return nil, usererr.New("%s: %v", path, err)
	}
	return t, nil
}

// Parse builds a Tokenizer from the bytes of a tokenizer.json file.
func Parse(data []byte) (*Tokenizer, error) {
	var f fileJSON
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("invalid tokenizer JSON: %w", err)
	}
	if f.Model.Type != "BPE" && !(f.Model.Type == "" && len(f.Model.Vocab) > 0) {
		return nil, fmt.Errorf("model.type: only BPE is supported, got %q", f.Model.Type)
	}
	if f.Model.Dropout != nil && *f.Model.Dropout > 0 {
		return nil, fmt.Errorf("model.dropout: BPE dropout is not supported, got %v", *f.Model.Dropout)
	}
	if p := f.Model.ContinuingSubwordPrefix; p != nil && *p != "" {
		return nil, fmt.Errorf("model.continuing_subword_prefix: not supported, got %q", *p)
	}
	if p := f.Model.EndOfWordSuffix; p != nil && *p != "" {
		return nil, fmt.Errorf("model.end_of_word_suffix: not supported, got %q", *p)
	}
	vocab, merges, err := decodeTables(f.Model)
	if err != nil {
		return nil, err
	}
	t := &Tokenizer{vocab: vocab}
	if err := t.indexTokens(f.AddedTokens); err != nil {
		return nil, err
	}
	if t.normalize, err = parseNormalizer(f.Normalizer); err != nil {
		return nil, fmt.Errorf("normalizer: %w", err)
	}
	var byteLevel bool
	if t.pretokenize, byteLevel, err = parsePreTokenizer(f.PreTokenizer); err != nil {
		return nil, fmt.Errorf("pre_tokenizer: %w", err)
	}
	if !byteLevel {
		return nil, fmt.Errorf("pre_tokenizer: only byte-level BPE is supported (no ByteLevel step found)")
	}
	var unk int32 = -1
	if u := f.Model.UnkToken; u != nil && *u != "" {
		id, ok := t.vocab[*u]
		if !ok {
			return nil, fmt.Errorf("model.unk_token %q is not in the vocabulary", *u)
		}
		unk = id
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t.tokenBytes = t.buildByteTable()
	}()
	t.bpe, err = newBPEModel(t.vocab, merges, unk, f.Model.IgnoreMerges)
	wg.Wait()
	if err != nil {
		return nil, fmt.Errorf("model.merges: %w", err)
	}
	return t, nil
}

// decodeTables decodes the vocabulary and the merges, the bulk of the file (151k entries each for
// Qwen3), in parallel.
func decodeTables(m modelJSON) (map[string]int32, mergeList, error) {
	var merges mergeList
	var mergesErr error
	var wg sync.WaitGroup
	if len(m.Merges) > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mergesErr = json.Unmarshal(m.Merges, &merges)
		}()
	}
	vocab := map[string]int32{}
	var vocabErr error
	if len(m.Vocab) > 0 {
		vocabErr = json.Unmarshal(m.Vocab, &vocab)
	}
	wg.Wait()
	if vocabErr != nil {
		return nil, nil, fmt.Errorf("model.vocab: %w", vocabErr)
	}
	if mergesErr != nil {
		return nil, nil, fmt.Errorf("model.merges: %w", mergesErr)
	}
	if vocab == nil { // "vocab": null
		vocab = map[string]int32{}
	}
	return vocab, merges, nil
}

// indexTokens builds the id-indexed tables from the vocabulary and the added tokens.
func (t *Tokenizer) indexTokens(added []AddedToken) error {
	t.addedByID, t.addedByText = map[int32]AddedToken{}, map[string]int32{}
	size := int32(0)
	for tok, id := range t.vocab {
		if id < 0 {
			return fmt.Errorf("model.vocab[%q]: negative id %d", tok, id)
		}
		size = max(size, id+1)
	}
	for _, a := range added {
		if a.Content == "" {
			return fmt.Errorf("added_tokens id %d: empty content", a.ID)
		}
		if a.ID < 0 {
			return fmt.Errorf("added_tokens %q: negative id %d", a.Content, a.ID)
		}
		size = max(size, a.ID+1)
		t.addedByID[a.ID] = a
		t.addedByText[a.Content] = a.ID
		t.added = append(t.added, a)
	}
	// Ids index dense tables; a stray huge id would make them enormous.
	if limit := 2*int32(len(t.vocab)+len(t.added)) + 1024; size > limit {
		return fmt.Errorf("ids run up to %d for %d tokens: the id range is too sparse", size-1, len(t.vocab)+len(t.added))
	}
	t.tokens = make([]string, size)
	t.kind = make([]tokenKind, size)
	t.special = make([]bool, size)
	for tok, id := range t.vocab {
		t.tokens[id] = tok
		t.kind[id] = vocabToken
	}
	for _, a := range t.added {
		t.tokens[a.ID] = a.Content
		t.kind[a.ID] = addedToken
		t.special[a.ID] = a.Special
	}
	t.matcher = newAddedMatcher(t.added)
	return nil
}

// VocabSize is one more than the largest id (the size of an embedding table that covers every token).
func (t *Tokenizer) VocabSize() int { return len(t.tokens) }

// TokenToID returns the id of a vocabulary string or added token's content.
func (t *Tokenizer) TokenToID(token string) (int32, bool) {
	if id, ok := t.addedByText[token]; ok {
		return id, true
	}
	id, ok := t.vocab[token]
	return id, ok
}

// IDToToken returns the vocabulary string of an id (byte-level characters, e.g. "Ġthe"), or an
// added token's content. It returns "" and false for ids outside the vocabulary.
func (t *Tokenizer) IDToToken(id int32) (string, bool) {
	if id < 0 || int(id) >= len(t.tokens) {
		return "", false
	}
	if t.kind[id] == noToken {
		return "", false // a hole in the id range
	}
	return t.tokens[id], true
}

// AddedTokens lists the added tokens in id order.
func (t *Tokenizer) AddedTokens() []AddedToken {
	out := make([]AddedToken, 0, len(t.addedByID))
	for id := int32(0); int(id) < len(t.tokens); id++ {
		if a, ok := t.addedByID[id]; ok {
			out = append(out, a)
		}
	}
	return out
}

// IsSpecial reports whether id is an added token marked special (a control token).
func (t *Tokenizer) IsSpecial(id int32) bool {
	a, ok := t.addedByID[id]
	return ok && a.Special
}

// MustID returns the id of a token known to exist, for callers that checked the vocabulary once
// (for example with RequireTokens).
func (t *Tokenizer) MustID(token string) int32 {
	id, ok := t.TokenToID(token)
	if !ok {
		panic(fmt.Sprintf("tokenizer: token %q is not in the vocabulary", token))
	}
	return id
}

// RequireTokens returns an error naming every token of the list that the vocabulary lacks.
func (t *Tokenizer) RequireTokens(tokens ...string) error {
	var missing []string
	for _, tok := range tokens {
		if _, ok := t.TokenToID(tok); !ok {
			missing = append(missing, tok)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("tokenizer lacks the tokens %s", strings.Join(missing, " "))
	}
	return nil
}
