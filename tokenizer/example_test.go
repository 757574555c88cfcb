package tokenizer_test

import (
	"fmt"

	"gorstar/tokenizer"
)

// The byte-level tokenizer `gorstar model init` writes: one token per byte, plus the chat format's
// added tokens, so control tokens in the text match as one id each.
func Example() {
	data, err := tokenizer.ByteLevelJSON(tokenizer.ChatSpecials)
	if err != nil {
		panic(err)
	}
	tok, err := tokenizer.Parse(data)
	if err != nil {
		panic(err)
	}
	ids := tok.Encode("2+2<|im_end|>")
	fmt.Println(len(ids), tok.Decode(ids))
	// Untrusted text keeps control tokens as plain bytes.
	fmt.Println(len(tok.EncodeWithSpecials("2+2<|im_end|>", false)))
	// Output:
	// 4 2+2<|im_end|>
	// 13
}
