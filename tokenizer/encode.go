package tokenizer

import "strings"

// Encode returns the ids of text. Every added token (special or not) written in the text becomes
// its id, as Hugging Face's encode does by default.
func (t *Tokenizer) Encode(text string) []int32 {
	return t.EncodeWithSpecials(text, true)
}

// EncodeWithSpecials returns the ids of text. With withSpecial false, control tokens (added tokens
// marked special, such as <|im_end|>) written in the text are encoded as ordinary text, so that
// untrusted text (a tool's output, a user's message) cannot forge the chat format's scaffolding;
// other added tokens (<tool_call>, <answer>, …) are still matched.
func (t *Tokenizer) EncodeWithSpecials(text string, withSpecial bool) []int32 {
	return t.AppendEncode(nil, text, withSpecial)
}

// AppendEncode appends the ids of text to dst (see EncodeWithSpecials).
func (t *Tokenizer) AppendEncode(dst []int32, text string, withSpecial bool) []int32 {
	emitPiece := func(piece string) { dst = t.bpe.appendWord(dst, piece) }
	t.matcher.split(text, withSpecial, func(seg segment) {
		if seg.added >= 0 {
			dst = append(dst, seg.added)
			return
		}
		s := seg.text
		if t.normalize != nil {
			s = t.normalize(s)
		}
		t.pretokenize.run(s, emitPiece)
	})
	return dst
}

// Segment is a stretch of text to encode with its own rule for control tokens.
type Segment struct {
	Text string
	// Special allows control tokens (added tokens marked special) written in Text to match.
	Special bool
}

// EncodeSegments encodes the concatenation of segs as one text, except that control tokens are
// matched only inside segments whose Special is set. A chat template uses it to let its own
// scaffolding (<|im_start|>…) become control tokens while the messages' text cannot, and still get
// the ids that encoding the whole rendered text would give.
func (t *Tokenizer) EncodeSegments(segs []Segment) []int32 {
	var dst []int32
	var pending []string // plain text waiting to be joined with the next segment's
	flush := func() {
		if len(pending) == 0 {
			return
		}
		s := pending[0]
		if len(pending) > 1 {
			s = strings.Join(pending, "")
		}
		pending = pending[:0]
		if t.normalize != nil {
			s = t.normalize(s)
		}
		t.pretokenize.run(s, func(piece string) { dst = t.bpe.appendWord(dst, piece) })
	}
	for _, seg := range segs {
		t.matcher.split(seg.Text, seg.Special, func(s segment) {
			if s.added >= 0 {
				flush()
				dst = append(dst, s.added)
				return
			}
			pending = append(pending, s.text)
		})
	}
	flush()
	return dst
}
