package tokenizer

// The byte-level alphabet of GPT-2: every byte gets a printable Unicode character so that BPE
// vocabularies can be stored as JSON strings. Printable Latin-1 bytes map to themselves; the
// other 68 bytes (controls, space, DEL, NBSP, soft hyphen …) map to U+0100 onwards in byte order.

// byteToRune is the GPT-2 mapping from a byte to its vocabulary character.
var byteToRune = buildByteToRune()

// runeToByte inverts byteToRune.
var runeToByte = buildRuneToByte()

func buildByteToRune() [256]rune {
	var table [256]rune
	next := rune(256)
	for b := 0; b < 256; b++ {
		if printableLatin1(b) {
			table[b] = rune(b)
		} else {
			table[b] = next
			next++
		}
	}
	return table
}

func printableLatin1(b int) bool {
	return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)
}

func buildRuneToByte() map[rune]byte {
	m := make(map[rune]byte, 256)
	for b, r := range byteToRune {
		m[r] = byte(b)
	}
	return m
}

// ByteToken returns the vocabulary string of a single byte in the byte-level alphabet.
func ByteToken(b byte) string { return string(byteToRune[b]) }

// byteLevelString maps raw bytes to their vocabulary characters.
func byteLevelString(s string) string {
	out := make([]rune, len(s))
	for i := 0; i < len(s); i++ {
		out[i] = byteToRune[s[i]]
	}
	return string(out)
}
