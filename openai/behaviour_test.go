package openai_test

import (
	"slices"
	"strings"
	"testing"
	"unicode"

	"gorstar/openai"

	"gorstar/engine"
	"gorstar/internal/testserve"
	"gorstar/serve"
)

// stopIn picks a stop string the engine's free generation will meet: the first two printable
// ASCII characters in a row of text, past its start, that occur there first.
func stopIn(text string) string {
	for i := 4; i+2 <= len(text); i++ {
		s := text[i : i+2]
		if s[0] < 128 && s[1] < 128 && unicode.IsPrint(rune(s[0])) && unicode.IsPrint(rune(s[1])) &&
			strings.Index(text, s) == i {
			return s
		}
	}
	return ""
}

// Against each server behaviour of vLLM and SGLang (testserve.Behaviours) over a real model, a
// completion with a stop string comes back as the engine generated it: the ids exactly where the
// server returns ids, the text with the stop string kept or put back where it returns text only,
// through a 500 and a dropped connection alike. Only a server that cuts the stop and names
// nothing leaves the text without it (rollout closes such turns).
func TestStopAndIDsPerBehaviour(t *testing.T) {
	dir := tinyDir(t, 5)
	srv := testserve.Start(t, dir, engine.Options{KVTokens: 8192, MaxSeqs: 8}, serve.Options{ModelName: "tiny"})
	eng, tok := loadEngine(t, dir)
	prompt := tok.EncodeWithSpecials("<|im_start|>user\nWhat is 6*7?<|im_end|>\n<|im_start|>assistant\n", true)
	seed := uint64(3)
	free := native(t, eng, prompt, 60, seed)
	stop := stopIn(tok.Decode(free.Tokens))
	if stop == "" {
		t.Fatalf("no ASCII pair in %q to stop at", tok.Decode(free.Tokens))
	}
	seq, err := eng.Submit(ctxT(t), engine.Request{Prompt: prompt, MaxTokens: 60, StopStrings: []string{stop},
		Sampling: engine.Sampling{Temperature: 1, TopP: 1, Seed: &seed}})
	if err != nil {
		t.Fatal(err)
	}
	want, err := seq.Wait(ctxT(t))
	if err != nil || want.Stop != stop {
		t.Fatalf("native run: stop %q, %v; want it to stop at %q", want.Stop, err, stop)
	}
	wantText := tok.DecodeSkipSpecial(want.Tokens)
	wantText = wantText[:strings.Index(wantText, stop)+len(stop)]
	for _, b := range testserve.Behaviours() {
		t.Run(b.Name, func(t *testing.T) {
			c := newClient(t, openai.Options{Endpoints: []string{testserve.StartMimic(t, srv, b)}, Model: "tiny", Tokenizer: tok})
			req := request(prompt, 60, seed)
			req.Stop = []string{stop}
			got, err := c.Complete(ctxT(t), req)
			if err != nil {
				t.Fatal(err)
			}
			if got.FinishReason != "stop" {
				t.Fatalf("finish %q, want stop", got.FinishReason)
			}
			switch {
			case b.IDs != testserve.IDsNone:
				if !slices.Equal(got.Tokens, want.Tokens) || got.Source == openai.FromText || !sameLogprobs(got.LogProbs, want.LogProbs) {
					t.Fatalf("ids %v (%s), want the engine's %v", got.Tokens, got.Source, want.Tokens)
				}
				if got.StopString != stop {
					t.Errorf("stop string %q, want %q", got.StopString, stop)
				}
			case b.StopField == "" && b.KeepStopFlag == "":
				if got.Text != strings.TrimSuffix(wantText, stop) || got.StopString != "" || got.StopRestored {
					t.Errorf("text %q, stop %q; want the text cut before %q and no stop named", got.Text, got.StopString, stop)
				}
			default:
				if got.Text != wantText || got.StopString != stop || got.Source != openai.FromText {
					t.Errorf("text %q (stop %q, %s), want %q", got.Text, got.StopString, got.Source, wantText)
				}
				if restored := b.KeepStopFlag == ""; got.StopRestored != restored {
					t.Errorf("stop restored %v, want %v", got.StopRestored, restored)
				}
			}
		})
	}
}
