package tokenizer

import (
	"strings"
	"unicode/utf8"
)

// Decode returns the text of ids. Byte-level tokens become their bytes, added tokens their content;
// byte sequences that are not valid UTF-8 (a character cut by a sampling stop, say) become U+FFFD
// as in Rust's from_utf8_lossy. Ids outside the vocabulary decode to U+FFFD.
func (t *Tokenizer) Decode(ids []int32) string {
	return t.decode(ids, false)
}

// DecodeSkipSpecial is Decode without control tokens (added tokens marked special).
func (t *Tokenizer) DecodeSkipSpecial(ids []int32) string {
	return t.decode(ids, true)
}

func (t *Tokenizer) decode(ids []int32, skipSpecial bool) string {
	var buf []byte
	for _, id := range ids {
		buf = t.appendTokenBytes(buf, id, skipSpecial)
	}
	var out strings.Builder
	appendLossy(&out, buf, true)
	return out.String()
}

// appendTokenBytes appends the bytes a token stands for.
func (t *Tokenizer) appendTokenBytes(buf []byte, id int32, skipSpecial bool) []byte {
	if id < 0 || int(id) >= len(t.special) {
		return append(buf, string(utf8.RuneError)...)
	}
	if skipSpecial && t.special[id] {
		return buf
	}
	return append(buf, t.tokenBytes.arena[t.tokenBytes.offsets[id]:t.tokenBytes.offsets[id+1]]...)
}

// byteTable holds the bytes of every token back to back: token i is arena[offsets[i]:offsets[i+1]].
type byteTable struct {
	offsets []uint32
	arena   []byte
}

// buildByteTable computes each token's bytes once so that decoding is a copy per token.
func (t *Tokenizer) buildByteTable() byteTable {
	bt := byteTable{offsets: make([]uint32, 1, len(t.tokens)+1)}
	for id := range t.tokens {
		bt.arena = t.appendSlowTokenBytes(bt.arena, int32(id))
		bt.offsets = append(bt.offsets, uint32(len(bt.arena)))
	}
	return bt
}

func (t *Tokenizer) appendSlowTokenBytes(buf []byte, id int32) []byte {
	tok := t.tokens[id]
	switch t.kind[id] {
	case addedToken:
		return append(buf, tok...)
	case noToken:
		return append(buf, string(utf8.RuneError)...) // a hole in the id range
	}
	if b, ok := byteFallbackToken(tok); ok {
		return append(buf, b)
	}
	// A token is byte-level only if every character is in the byte alphabet; otherwise its
	// characters stand for themselves (the rule of Hugging Face's ByteLevel decoder).
	start := len(buf)
	for _, r := range tok {
		b, ok := runeToByte[r]
		if !ok {
			return append(buf[:start], tok...)
		}
		buf = append(buf, b)
	}
	return buf
}

// byteFallbackToken recognises sentencepiece-style byte tokens such as <0x0A>.
func byteFallbackToken(tok string) (byte, bool) {
	if len(tok) != 6 || tok[:3] != "<0x" || tok[5] != '>' {
		return 0, false
	}
	hi, ok1 := hexDigit(tok[3])
	lo, ok2 := hexDigit(tok[4])
	return hi<<4 | lo, ok1 && ok2
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// appendLossy writes buf as text, replacing each maximal invalid subsequence by one U+FFFD. When
// final is false, an incomplete but so far valid character at the end is not written; its bytes
// are returned so that the caller can complete them later.
func appendLossy(out *strings.Builder, buf []byte, final bool) []byte {
	if utf8.Valid(buf) {
		out.Write(buf)
		return nil
	}
	valid := 0 // start of the run of valid bytes not yet written
	for i := 0; i < len(buf); {
		if buf[i] < utf8.RuneSelf {
			i++
			continue
		}
		if r, w := utf8.DecodeRune(buf[i:]); r != utf8.RuneError || w > 1 {
			i += w
			continue
		}
		out.Write(buf[valid:i])
		k := validPrefix(buf[i:])
		if i+k == len(buf) && !final {
			return buf[i:] // the start of a character whose other bytes have not arrived yet
		}
		out.WriteRune(utf8.RuneError)
		i += max(k, 1)
		valid = i
	}
	out.Write(buf[valid:])
	return nil
}

// validPrefix returns how many leading bytes of buf form the start of a well-formed UTF-8
// sequence (the "maximal subpart" of the Unicode standard), 0 if the first byte cannot start one.
func validPrefix(buf []byte) int {
	lead := buf[0]
	var need int
	lo, hi := byte(0x80), byte(0xBF)
	switch {
	case lead >= 0xC2 && lead <= 0xDF:
		need = 1
	case lead == 0xE0:
		need, lo = 2, 0xA0
	case lead >= 0xE1 && lead <= 0xEC, lead == 0xEE, lead == 0xEF:
		need = 2
	case lead == 0xED:
		need, hi = 2, 0x9F
	case lead == 0xF0:
		need, lo = 3, 0x90
	case lead >= 0xF1 && lead <= 0xF3:
		need = 3
	case lead == 0xF4:
		need, hi = 3, 0x8F
	default:
		return 0
	}
	k := 1
	for ; k <= need && k < len(buf); k++ {
		c := buf[k]
		if k == 1 {
			if c < lo || c > hi {
				break
			}
		} else if c < 0x80 || c > 0xBF {
			break
		}
	}
	return k
}

// TokenBytes returns the bytes a token stands for (possibly part of a UTF-8 character), or false
// for an id outside the vocabulary.
func (t *Tokenizer) TokenBytes(id int32) ([]byte, bool) {
	if _, ok := t.IDToToken(id); !ok {
		return nil, false
	}
	return t.appendTokenBytes(nil, id, false), true
}
