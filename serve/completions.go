package serve

import (
	"net/http"
	"strconv"
	"time"

	"gorstar/engine"
	"gorstar/internal/plainjson"
	"gorstar/openai"
)

// completions answers POST /v1/completions. A list prompt gives n choices per prompt, in order.
func (s *Server) completions(w http.ResponseWriter, r *http.Request) error {
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	var req openai.CompletionRequest
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
	base, n, err := s.engineRequest(&req.SamplingParams, 16)
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
	resp := openai.CompletionResponse{ID: newID("cmpl-"), Object: "text_completion", Created: time.Now().Unix(),
		Model: s.opts.ModelName}
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
			ch := openai.CompletionChoice{Index: p*n + i, Text: s.text(c, base.StopTokens, keepStop(&req.SamplingParams)),
				FinishReason: ptr(finishReason(c.finish)), StopReason: stopReason(c, req.StopTokenIDs)}
			if req.Logprobs != nil {
				ch.Logprobs = s.completionLogprobs(c, req.ReturnTokensAsTokenIDs)
			}
			if req.ReturnTokenIDs {
				ch.TokenIDs, ch.PromptTokenIDs = nonNil(c.tokens), prompt
			}
			resp.Choices = append(resp.Choices, ch)
		}
	}
	resp.Usage = usage(promptTokens, completionTokens)
	resp.WeightVersion = s.weightVersion()
	plainjson.WriteHTTP(w, http.StatusOK, resp)
	return nil
}

// engineRequest builds the engine request (without prompt) and n from the shared fields.
func (s *Server) engineRequest(req *openai.SamplingParams, defaultMax int) (engine.Request, int, error) {
	samp, n, err := sampling(req)
	if err != nil {
		return engine.Request{}, 0, err
	}
	stops, err := stops(req)
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
func (s *Server) completionLogprobs(c choice, asIDs bool) *openai.CompletionLogprobs {
	lp := &openai.CompletionLogprobs{Tokens: make([]string, len(c.tokens)), TextOffset: make([]int, len(c.tokens)),
		TokenLogprobs: make([]*float32, len(c.tokens))}
	off := 0
	for i, id := range c.tokens {
		lp.TextOffset[i] = off
		off += len(s.tok.Decode([]int32{id}))
		lp.Tokens[i] = s.tokenName(id, asIDs)
		lp.TokenLogprobs[i] = &c.logprobs[i]
	}
	if c.top != nil {
		lp.TopLogprobs = make([]map[string]float32, len(c.top))
		for i, alts := range c.top {
			lp.TopLogprobs[i] = map[string]float32{}
			for _, a := range alts {
				lp.TopLogprobs[i][s.tokenName(a.Token, asIDs)] = a.LogProb
			}
		}
	}
	return lp
}

// tokenName is how logprobs name a token: its text, or "token_id:ID" as vLLM writes it with
// return_tokens_as_token_ids (texts of partial UTF-8 characters cannot be mapped back to ids).
func (s *Server) tokenName(id int32, asID bool) string {
	if asID {
		return "token_id:" + strconv.Itoa(int(id))
	}
	return s.tok.Decode([]int32{id})
}
