package serve

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"gorstar/engine"
)

type completionRequest struct {
	commonRequest
	Prompt   json.RawMessage `json:"prompt"`
	Logprobs *int            `json:"logprobs"`
	Echo     bool            `json:"echo"`
}

// completions answers POST /v1/completions. A list prompt gives n choices per prompt, in order.
func (s *Server) completions(w http.ResponseWriter, r *http.Request) error {
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	var req completionRequest
	if err := decodeBody(body, &req); err != nil {
		return err
	}
	if err := s.checkModel(req.Model); err != nil {
		return err
	}
	if req.Echo {
		return badRequest("echo", "echo is not supported")
	}
	if req.Logprobs != nil && (*req.Logprobs < 0 || *req.Logprobs > 20) {
		return badRequest("logprobs", "logprobs must be between 0 and 20, got %d", *req.Logprobs)
	}
	texts, idLists, err := parsePrompt(req.Prompt)
	if err != nil {
		return err
	}
	prompts := make([][]int32, len(texts))
	for i := range texts {
		if idLists[i] != nil {
			prompts[i] = idLists[i]
		} else {
			prompts[i] = s.tok.EncodeWithSpecials(texts[i], true)
		}
		if len(prompts[i]) == 0 {
			return badRequest("prompt", "prompt %d is empty", i)
		}
	}
	base, n, err := s.engineRequest(&req.commonRequest, 16)
	if err != nil {
		return err
	}
	if req.Logprobs != nil {
		base.TopLogProbs = *req.Logprobs
	}
	if req.Stream {
		if len(prompts) != 1 {
			return badRequest("prompt", "stream takes one prompt")
		}
		base.Prompt = prompts[0]
		return s.streamCompletion(w, r, base, n, &req)
	}
	id := newID("cmpl-")
	var choices []any
	promptTokens, completionTokens := 0, 0
	for p, prompt := range prompts {
		er := base
		er.Prompt = prompt
		outs, err := s.generate(r.Context(), er, n)
		if err != nil {
			return err
		}
		promptTokens += len(prompt)
		for i, c := range outs {
			completionTokens += len(c.tokens)
			ch := map[string]any{"index": p*n + i, "text": s.text(c, base.StopTokens, req.keepStop()), "logprobs": nil,
				"finish_reason": finishReason(c.finish), "stop_reason": stopReason(c, req.StopTokenIDs)}
			if req.Logprobs != nil {
				ch["logprobs"] = s.completionLogprobs(c, req.ReturnTokensAsTokenIDs)
			}
			if req.ReturnTokenIDs {
				ch["token_ids"] = c.tokens
				ch["prompt_token_ids"] = prompt
			}
			choices = append(choices, ch)
		}
	}
	_, version := s.weights.current()
	writeJSON(w, http.StatusOK, map[string]any{
		"id": id, "object": "text_completion", "created": time.Now().Unix(), "model": s.opts.ModelName,
		"choices": choices, "usage": usage(promptTokens, completionTokens), "weight_version": version,
	})
	return nil
}

// engineRequest builds the engine request (without prompt) and n from the shared fields.
func (s *Server) engineRequest(req *commonRequest, defaultMax int) (engine.Request, int, error) {
	samp, n, err := req.sampling()
	if err != nil {
		return engine.Request{}, 0, err
	}
	stops, err := req.stops()
	if err != nil {
		return engine.Request{}, 0, err
	}
	er := engine.Request{Sampling: samp, StopStrings: stops, MaxTokens: defaultMax}
	if req.MaxTokens != nil {
		if *req.MaxTokens < 1 {
			return er, 0, badRequest("max_tokens", "max_tokens must be ≥ 1, got %d", *req.MaxTokens)
		}
		er.MaxTokens = *req.MaxTokens
	}
	if !req.IgnoreEOS {
		er.StopTokens = append(er.StopTokens, s.eos...)
	}
	er.StopTokens = append(er.StopTokens, req.StopTokenIDs...)
	return er, n, nil
}

// completionLogprobs is the legacy completions logprobs object: the text of each token (or
// "token_id:ID" with asIDs), its log-probability and, when asked for, the most likely tokens'
// names and log-probabilities. Offsets count the decoded text either way.
func (s *Server) completionLogprobs(c choice, asIDs bool) map[string]any {
	tokens := make([]string, len(c.tokens))
	offsets := make([]int, len(c.tokens))
	off := 0
	for i, id := range c.tokens {
		offsets[i] = off
		off += len(s.tok.Decode([]int32{id}))
		tokens[i] = s.tokenName(id, asIDs)
	}
	var top any
	if c.top != nil {
		list := make([]map[string]float32, len(c.top))
		for i, alts := range c.top {
			list[i] = map[string]float32{}
			for _, a := range alts {
				list[i][s.tokenName(a.Token, asIDs)] = a.LogProb
			}
		}
		top = list
	}
	return map[string]any{"tokens": tokens, "token_logprobs": c.logprobs, "top_logprobs": top, "text_offset": offsets}
}

// tokenName is how logprobs name a token: its text, or "token_id:ID" as vLLM writes it with
// return_tokens_as_token_ids (texts of partial UTF-8 characters cannot be mapped back to ids).
func (s *Server) tokenName(id int32, asID bool) string {
	if asID {
		return "token_id:" + strconv.Itoa(int(id))
	}
	return s.tok.Decode([]int32{id})
}
