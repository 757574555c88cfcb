package serve

import (
	"bytes"
	"encoding/json"
	"math"

	"gorstar/engine"
	"gorstar/internal/jsonerr"
	"gorstar/openai"
)

// The request fields /v1/completions and /v1/chat/completions share are openai.SamplingParams,
// the types the client sends. Unknown fields are ignored, as OpenAI-compatible servers do
// (clients send many).

// maxSkip bounds sampler_skip: more draws than any context holds tokens is a mistake.
const maxSkip = 1 << 24

// keepStop says the answer's text keeps the stop string that ended it.
func keepStop(r *openai.SamplingParams) bool { return r.IncludeStopStrInOutput || r.NoStopTrim }

// includeUsage says a stream ends with a usage chunk.
func includeUsage(r *openai.SamplingParams) bool {
	return r.StreamOptions != nil && r.StreamOptions.IncludeUsage
}

const maxN = 64

// sampling converts the shared fields into engine settings. OpenAI's defaults: temperature 1,
// top_p 1, n 1.
func sampling(r *openai.SamplingParams) (engine.Sampling, int, error) {
	s := engine.Sampling{Temperature: 1, TopP: 1}
	if r.Temperature != nil {
		s.Temperature = *r.Temperature
		if math.IsNaN(s.Temperature) || s.Temperature < 0 || s.Temperature > 2 {
			return s, 0, badRequest("temperature", "temperature must be between 0 and 2, got %g", s.Temperature)
		}
	}
	if r.TopP != nil {
		s.TopP = *r.TopP
		if math.IsNaN(s.TopP) || s.TopP <= 0 || s.TopP > 1 {
			return s, 0, badRequest("top_p", "top_p must be in (0, 1], got %g", s.TopP)
		}
	}
	if r.TopK != nil {
		s.TopK = *r.TopK
		if s.TopK < -1 {
			return s, 0, badRequest("top_k", "top_k must be -1, 0 (off) or positive, got %d", s.TopK)
		}
		s.TopK = max(s.TopK, 0)
	}
	n := 1
	if r.N != nil {
		n = *r.N
		if n < 1 || n > maxN {
			return s, 0, badRequest("n", "n must be between 1 and %d, got %d", maxN, n)
		}
	}
	if r.Seed != nil {
		seed := uint64(*r.Seed)
		s.Seed = &seed
	}
	if r.SamplerSeed != nil {
		seed := *r.SamplerSeed
		s.Seed = &seed
	}
	if r.SamplerSkip != nil {
		if *r.SamplerSkip < 0 || *r.SamplerSkip > maxSkip {
			return s, 0, badRequest("sampler_skip", "sampler_skip must be between 0 and %d, got %d", maxSkip, *r.SamplerSkip)
		}
		s.SkipDraws = uint64(*r.SamplerSkip)
	}
	return s, n, nil
}

// stops parses "stop": null, a string, or a list of up to 4 strings (vLLM allows more; so do we).
func stops(r *openai.SamplingParams) ([]string, error) {
	raw := bytes.TrimSpace(r.Stop)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		if one == "" {
			return nil, nil
		}
		return []string{one}, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, badRequest("stop", "stop must be a string or a list of strings")
	}
	out := list[:0]
	for _, s := range list {
		if s != "" {
			out = append(out, s)
		}
	}
	return out, nil
}

// promptList parses a completions prompt: a string, a list of strings, a list of token ids, or a
// list of such lists. Each element is one prompt; strings come back in texts, ids in ids (one of
// the two per element).
func parsePrompt(raw json.RawMessage) (texts []string, ids [][]int32, err error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil, badRequest("prompt", "prompt is required")
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []string{s}, [][]int32{nil}, nil
	}
	var tokens []int32
	if json.Unmarshal(raw, &tokens) == nil {
		return []string{""}, [][]int32{tokens}, nil
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		return nil, nil, badRequest("prompt", "prompt must be a string, a list of strings, a list of token ids or a list of such lists")
	}
	if len(list) == 0 {
		return nil, nil, badRequest("prompt", "prompt is an empty list")
	}
	for i, el := range list {
		if json.Unmarshal(el, &s) == nil {
			texts, ids = append(texts, s), append(ids, nil)
			continue
		}
		var one []int32 // fresh each time: Unmarshal would reuse a slice's array for the next prompt
		if json.Unmarshal(el, &one) == nil {
			texts, ids = append(texts, ""), append(ids, one)
			continue
		}
		return nil, nil, badRequest("prompt", "prompt[%d] must be a string or a list of token ids", i)
	}
	return texts, ids, nil
}

// decodeBody unmarshals a JSON request body, reporting malformed JSON or a field of the wrong type
// as a 400 that names the field and the JSON type it takes.
func decodeBody(body []byte, v any) error {
	if err := json.Unmarshal(body, v); err != nil {
		msg, field := jsonerr.Describe(err, "CompletionRequest", "SamplingParams")
		if field == "" {
			msg = "request body: " + msg
		}
		return badRequest(field, "%s", msg)
	}
	return nil
}
