package tokenizer

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// splitStep cuts a piece of text into smaller pieces, in order, covering the piece exactly
// (or nearly: a byte-level step may prepend a space).
type splitStep func(s string, emit func(string))

// pretokenizer is the declared pre-tokenizer as a chain of split steps.
type pretokenizer []splitStep

func (p pretokenizer) run(s string, emit func(string)) {
	switch len(p) {
	case 0:
		emit(s)
	case 1:
		p[0](s, emit)
	default:
		p[0](s, func(piece string) { p[1:].run(piece, emit) })
	}
}

const (
	gpt2SplitPattern   = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
	llama3SplitPattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// parsePreTokenizer returns the split chain and whether it contains a ByteLevel step.
func parsePreTokenizer(raw json.RawMessage) (pretokenizer, bool, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, false, nil
	}
	var c componentJSON
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, false, err
	}
	switch c.Type {
	case "Sequence":
		var chain pretokenizer
		byteLevel := false
		for i, member := range c.PreTokenizers {
			steps, bl, err := parsePreTokenizer(member)
			if err != nil {
				return nil, false, fmt.Errorf("pretokenizers[%d]: %w", i, err)
			}
			chain = append(chain, steps...)
			byteLevel = byteLevel || bl
		}
		return chain, byteLevel, nil
	case "Split":
		step, err := parseSplit(c)
		if err != nil {
			return nil, false, err
		}
		return pretokenizer{step}, false, nil
	case "ByteLevel":
		// Hugging Face's default for use_regex is true.
		useRegex := c.UseRegex == nil || *c.UseRegex
		prefix := c.AddPrefixSpace
		return pretokenizer{func(s string, emit func(string)) {
			if prefix && !strings.HasPrefix(s, " ") {
				s = " " + s
			}
			if useRegex {
				splitGPT2(s, emit)
			} else {
				emit(s)
			}
		}}, true, nil
	default:
		return nil, false, fmt.Errorf("type %q is not supported (Sequence, Split, ByteLevel are)", c.Type)
	}
}

func parseSplit(c componentJSON) (splitStep, error) {
	if c.Behavior != "Isolated" {
		return nil, fmt.Errorf("pre-tokenizer Split: behavior %q is not supported (Isolated is)", c.Behavior)
	}
	if c.Invert {
		return nil, fmt.Errorf("pre-tokenizer Split: invert=true is not supported")
	}
	if c.Pattern == nil || (c.Pattern.Regex == nil && c.Pattern.String == nil) {
		return nil, fmt.Errorf("pre-tokenizer Split: no pattern")
	}
	if lit := c.Pattern.String; lit != nil {
		if *lit == "" {
			return nil, fmt.Errorf("pre-tokenizer Split: the pattern is an empty string")
		}
		return literalSplit(*lit), nil
	}
	switch pattern := *c.Pattern.Regex; pattern {
	case qwenSplitPattern:
		return func(s string, emit func(string)) { splitQwen(s, 1, emit) }, nil
	case llama3SplitPattern:
		return func(s string, emit func(string)) { splitQwen(s, 3, emit) }, nil
	case gpt2SplitPattern:
		return splitGPT2, nil
	default:
		re, err := regexp.Compile(pattern)
		if err != nil {
			return nil, fmt.Errorf("pre-tokenizer Split: pattern %q: not a known tokenizer pattern and Go's regexp rejects it: %w", pattern, err)
		}
		return regexpSplit(re), nil
	}
}

// literalSplit isolates every occurrence of lit.
func literalSplit(lit string) splitStep {
	return func(s string, emit func(string)) {
		for {
			k := strings.Index(s, lit)
			if k < 0 {
				break
			}
			if k > 0 {
				emit(s[:k])
			}
			emit(s[k : k+len(lit)])
			s = s[k+len(lit):]
		}
		if s != "" {
			emit(s)
		}
	}
}

// regexpSplit isolates every match of re; the text between matches forms pieces too.
func regexpSplit(re *regexp.Regexp) splitStep {
	return func(s string, emit func(string)) {
		last := 0
		for _, m := range re.FindAllStringIndex(s, -1) {
			if m[0] == m[1] {
				continue
			}
			if m[0] > last {
				emit(s[last:m[0]])
			}
			emit(s[m[0]:m[1]])
			last = m[1]
		}
		if last < len(s) {
			emit(s[last:])
		}
	}
}
