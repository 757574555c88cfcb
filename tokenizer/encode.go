package tokenizer

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
