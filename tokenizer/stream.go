package tokenizer

import "strings"

// StreamDecoder turns ids into text one token at a time. Text is released only in whole UTF-8
// characters: the bytes of a character split across tokens are held until it is complete.
// Concatenating every Add's result and Flush's equals Decode of all the ids.
type StreamDecoder struct {
	t           *Tokenizer
	skipSpecial bool
	pending     []byte
}

// NewStreamDecoder starts a stream; with skipSpecial, control tokens produce no text.
func (t *Tokenizer) NewStreamDecoder(skipSpecial bool) *StreamDecoder {
	return &StreamDecoder{t: t, skipSpecial: skipSpecial}
}

// Add takes the next id and returns the text it completes (possibly "").
func (d *StreamDecoder) Add(id int32) string {
	d.pending = d.t.appendTokenBytes(d.pending, id, d.skipSpecial)
	var out strings.Builder
	rest := appendLossy(&out, d.pending, false)
	d.pending = append(d.pending[:0], rest...)
	return out.String()
}

// Flush returns what is left (U+FFFD for a character that never completed) and resets the stream.
func (d *StreamDecoder) Flush() string {
	var out strings.Builder
	appendLossy(&out, d.pending, true)
	d.pending = d.pending[:0]
	return out.String()
}
