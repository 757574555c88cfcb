// Package tokenizer reads and writes Hugging Face tokenizer.json files for byte-level BPE (the
// scheme of GPT-2, Qwen2 and Qwen3) and encodes text to token ids and back.
//
// Encoding follows the Hugging Face pipeline: added tokens are cut out of the text first (longest
// match), the remaining pieces are normalized (NFC for Qwen), split by the pre-tokenizer's regex
// (implemented by hand because Go's regexp has no lookahead), mapped to bytes and merged by BPE rank.
// Decoding maps byte-level tokens back to bytes and replaces invalid UTF-8 as Rust's
// from_utf8_lossy does; StreamDecoder emits text token by token without ever splitting a character.
//
// A Tokenizer is immutable after loading and safe for concurrent use; its BPE cache is bounded.
package tokenizer
