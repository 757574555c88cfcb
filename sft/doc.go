// Package sft is the supervised fine-tuning stage: the non-reasoning warm-up that teaches a model
// the multi-turn tool-call format before RL. It reads a conversations table (Parquet or JSONL,
// OpenAI-style messages with tool_calls and the tool role), renders each conversation with the
// chat template into token ids and an assistant mask (the loss counts the assistant's text, tool
// calls and end-of-turn tokens only), and trains with AdamW under a warm-up + cosine or constant
// learning rate, accumulating gradients over micro-batches up to a target batch in conversations
// or tokens.
//
// The order of training is a pure function of the data, the settings and the seed (a seeded
// shuffle per epoch, cut into optimizer steps), so a checkpoint needs only the weights, the AdamW
// moments and the step reached: Run with Resume continues from the newest complete checkpoint and
// ends with the same weights, bit for bit, as a run that was never interrupted.
//
// No compute goes to padding: each step's conversations are packed into passes of at most
// micro_batch_tokens tokens, each pass one row (Pack), each conversation its own document — the
// attention kernel keeps attention inside it and RoPE positions restart.
package sft
