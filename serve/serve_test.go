package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"gorstar/engine"
	"gorstar/internal/testenv"
	"gorstar/internal/testmodel"
	"gorstar/tokenizer"
)

func TestMain(m *testing.M) { testmodel.Main(m) }

// startServer writes a `model init` tiny model, loads it and serves it on 127.0.0.1.
func startServer(t *testing.T, opts engine.Options) string {
	t.Helper()
	return serveDirWith(t, testmodel.TinyDir(t), opts, Options{ModelName: "tiny", Primer: "<reason>"})
}

type response struct {
	status int
	body   map[string]any
	raw    string
}

func post(t *testing.T, url, body string) response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return response{res.StatusCode, m, string(raw)}
}

func choices(t *testing.T, r response) []map[string]any {
	t.Helper()
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.raw)
	}
	var out []map[string]any
	for _, c := range r.body["choices"].([]any) {
		out = append(out, c.(map[string]any))
	}
	return out
}

// errorOf checks an OpenAI-style error body and returns its message.
func errorOf(t *testing.T, r response, status int) string {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.raw)
	}
	e, ok := r.body["error"].(map[string]any)
	if !ok || e["message"] == "" || e["type"] == "" {
		t.Fatalf("no OpenAI error object in %s", r.raw)
	}
	return e["message"].(string)
}

func TestCompletionsAndModels(t *testing.T) {
	url := startServer(t, engine.Options{KVTokens: 4096, MaxSeqs: 8})
	res, err := http.Get(url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	var models struct {
		Data []struct{ ID string } `json:"data"`
	}
	json.NewDecoder(res.Body).Decode(&models)
	res.Body.Close()
	if len(models.Data) != 1 || models.Data[0].ID != "tiny" {
		t.Errorf("models: %+v", models)
	}

	r := post(t, url+"/v1/completions", `{"model": "tiny", "prompt": "2+2=", "max_tokens": 8, "temperature": 0.8, "seed": 3}`)
	c := choices(t, r)
	if len(c) != 1 || c[0]["finish_reason"] == nil {
		t.Fatalf("choices %v", c)
	}
	u := r.body["usage"].(map[string]any)
	if u["completion_tokens"].(float64) < 1 || u["prompt_tokens"].(float64) != 4 {
		t.Errorf("usage %v", u)
	}
	// Same seed, same text.
	if again := choices(t, post(t, url+"/v1/completions", `{"model": "tiny", "prompt": "2+2=", "max_tokens": 8, "temperature": 0.8, "seed": 3}`)); again[0]["text"] != c[0]["text"] {
		t.Errorf("seed 3 gave %q then %q", c[0]["text"], again[0]["text"])
	}

	// Token ids, n = 2, logprobs and token ids back.
	r = post(t, url+"/v1/completions", `{"prompt": [50, 51, 52], "max_tokens": 5, "n": 2, "logprobs": 1, "ignore_eos": true, "return_token_ids": true}`)
	c = choices(t, r)
	if len(c) != 2 {
		t.Fatalf("%d choices, want 2", len(c))
	}
	for _, ch := range c {
		lp := ch["logprobs"].(map[string]any)
		if n := len(lp["token_logprobs"].([]any)); n != 5 || len(ch["token_ids"].([]any)) != 5 {
			t.Errorf("%d logprobs for 5 tokens", n)
		}
		for _, v := range lp["token_logprobs"].([]any) {
			if v.(float64) > 0 {
				t.Errorf("logprob %v > 0", v)
			}
		}
		if top := lp["top_logprobs"].([]any); len(top) != 5 || len(top[0].(map[string]any)) != 1 {
			t.Errorf("top_logprobs %v", top)
		}
		if ch["finish_reason"] != "length" {
			t.Errorf("finish %v, want length", ch["finish_reason"])
		}
	}
	// A list of prompts gives one choice per prompt.
	if c := choices(t, post(t, url+"/v1/completions", `{"prompt": ["a", [97, 98]], "max_tokens": 2}`)); len(c) != 2 {
		t.Errorf("%d choices for two prompts", len(c))
	}
	// A stop string is cut from the text.
	r = post(t, url+"/v1/completions", `{"prompt": "x", "max_tokens": 12, "temperature": 0, "ignore_eos": true}`)
	full := choices(t, r)[0]["text"].(string)
	stop := ""
	for _, r := range []rune(full)[1:] {
		if r != utf8.RuneError {
			stop = string(r)
			break
		}
	}
	t.Logf("greedy text %q, stop %q", full, stop)
	if stop != "" {
		got := choices(t, post(t, url+"/v1/completions", fmt.Sprintf(`{"prompt": "x", "max_tokens": 12, "temperature": 0, "ignore_eos": true, "stop": [%q]}`, stop)))[0]
		if text := got["text"].(string); strings.Contains(text, stop) || !strings.HasPrefix(full, text) || got["finish_reason"] != "stop" {
			t.Errorf("stop %q: text %q (full %q), finish %v", stop, text, full, got["finish_reason"])
		}
	}
}

func TestBadRequests(t *testing.T) {
	url := startServer(t, engine.Options{KVTokens: 4096, MaxSeqs: 4})
	long := strings.Repeat("a ", 5000)
	for _, tc := range []struct {
		name, path, body string
		status           int
	}{
		{"malformed JSON", "/v1/completions", `{"prompt": "x",`, 400},
		{"wrong type", "/v1/completions", `{"prompt": "x", "max_tokens": "many"}`, 400},
		{"unknown model", "/v1/completions", `{"model": "gpt-9", "prompt": "x"}`, 404},
		{"no prompt", "/v1/completions", `{"model": "tiny"}`, 400},
		{"empty prompt", "/v1/completions", `{"prompt": ""}`, 400},
		{"prompt over the context", "/v1/completions", fmt.Sprintf(`{"prompt": %q}`, long), 400},
		{"max_tokens over the context", "/v1/completions", `{"prompt": "x", "max_tokens": 100000}`, 400},
		{"bad token id", "/v1/completions", `{"prompt": [1, 999999]}`, 400},
		{"bad temperature", "/v1/completions", `{"prompt": "x", "temperature": -1}`, 400},
		{"bad n", "/v1/completions", `{"prompt": "x", "n": 0}`, 400},
		{"bad stop", "/v1/completions", `{"prompt": "x", "stop": 5}`, 400},
		{"no messages", "/v1/chat/completions", `{"messages": []}`, 400},
		{"bad role", "/v1/chat/completions", `{"messages": [{"role": "robot", "content": "hi"}]}`, 400},
		{"chat malformed", "/v1/chat/completions", `[`, 400},
		{"unknown route", "/v1/embeddings", `{}`, 404},
	} {
		msg := errorOf(t, post(t, url+tc.path, tc.body), tc.status)
		t.Logf("%s → %d %s", tc.name, tc.status, msg)
	}
	res, err := http.Get(url + "/v1/completions")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /v1/completions: %d", res.StatusCode)
	}
}

// A body or field of the wrong JSON type gets a message naming the field and the JSON type it
// takes, in the error's param too — never a Go type name.
func TestBadRequestMessages(t *testing.T) {
	url := startServer(t, engine.Options{KVTokens: 4096, MaxSeqs: 4})
	for _, tc := range []struct {
		path, body, want, param string
	}{
		{"/v1/completions", `[]`, "request body: expected an object, got a list", ""},
		{"/v1/completions", `{"prompt": "x",`, "request body: invalid JSON at byte 15: unexpected end of JSON input", ""},
		{"/v1/completions", `{"prompt": "x", "max_tokens": "many"}`, "max_tokens: expected an integer, got a string", "max_tokens"},
		{"/v1/completions", `{"prompt": "x", "temperature": [1]}`, "temperature: expected a number, got a list", "temperature"},
		{"/v1/chat/completions", `{"messages": {"role": "user"}}`, "messages: expected a list, got an object", "messages"},
		{"/v1/chat/completions", `{"messages": [{"role": 1}]}`, "messages.role: expected a string, got a number", "messages.role"},
		{"/v1/chat/completions", `{"messages": [{"role": "user", "content": "hi"}], "logprobs": "yes"}`, "logprobs: expected true or false, got a string", "logprobs"},
	} {
		r := post(t, url+tc.path, tc.body)
		if msg := errorOf(t, r, 400); msg != tc.want {
			t.Errorf("%s %s: %q, want %q", tc.path, tc.body, msg, tc.want)
		}
		if param, _ := r.body["error"].(map[string]any)["param"].(string); param != tc.param {
			t.Errorf("%s %s: param %q, want %q", tc.path, tc.body, param, tc.param)
		}
		for _, goWord := range []string{"serve.", "json.RawMessage", "Go value", "map["} {
			if strings.Contains(r.raw, goWord) {
				t.Errorf("%s %s: Go type in %s", tc.path, tc.body, r.raw)
			}
		}
	}
}

// Unknown request fields are ignored, as OpenAI's API and vLLM do (clients send many); the known
// ones beside them still act.
func TestUnknownFieldsIgnored(t *testing.T) {
	url := startServer(t, engine.Options{KVTokens: 4096, MaxSeqs: 4})
	extra := `"user": "u1", "logit_bias": {"5": 1}, "frequency_penalty": 0, "response_format": {"type": "text"}, "frobnicate": [1, {"a": null}]`
	for _, tc := range []struct{ path, body string }{
		{"/v1/completions", `{"prompt": "x", "max_tokens": 3, "ignore_eos": true, ` + extra + `}`},
		{"/v1/chat/completions", `{"messages": [{"role": "user", "content": "hi", "weight": 1}], "max_tokens": 3, "ignore_eos": true, ` + extra + `}`},
	} {
		r := post(t, url+tc.path, tc.body)
		if r.status != 200 {
			t.Fatalf("%s: status %d: %s", tc.path, r.status, r.raw)
		}
		usage, _ := r.body["usage"].(map[string]any)
		if usage["completion_tokens"] != 3.0 {
			t.Errorf("%s: max_tokens beside unknown fields not applied: %s", tc.path, r.raw)
		}
	}
}

// Requests beyond the KV capacity wait their turn; with a bounded queue the excess gets 429. None
// crashes or hangs.
func TestConcurrencyBeyondCapacity(t *testing.T) {
	for _, waiting := range []int{0, 1} {
		url := startServer(t, engine.Options{KVTokens: 64, MaxSeqs: 4, MaxWaiting: waiting})
		var wg sync.WaitGroup
		statuses := make([]int, 12)
		for i := range statuses {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := post(t, url+"/v1/completions", `{"prompt": "hello", "max_tokens": 30, "ignore_eos": true}`)
				statuses[i] = r.status
				if r.status != 200 {
					errorOf(t, r, 429)
				}
			}()
		}
		wg.Wait()
		ok := 0
		for _, s := range statuses {
			if s == 200 {
				ok++
			}
		}
		t.Logf("max waiting %d: statuses %v", waiting, statuses)
		if waiting == 0 && ok != len(statuses) {
			t.Errorf("unbounded queue: %d of %d succeeded", ok, len(statuses))
		}
		if ok == 0 {
			t.Errorf("no request succeeded")
		}
	}
}

func TestChatCompletions(t *testing.T) {
	url := startServer(t, engine.Options{KVTokens: 8192, MaxSeqs: 4})
	body := `{"model": "tiny", "max_tokens": 6, "seed": 1, "logprobs": true, "top_logprobs": 2, "messages": [
		{"role": "system", "content": "Be brief."},
		{"role": "user", "content": [{"type": "text", "text": "What is 2+2?"}]},
		{"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "python", "arguments": "{\"code\": \"print(2+2)\"}"}}]},
		{"role": "tool", "tool_call_id": "c1", "content": "4"}],
		"tools": [{"type": "function", "function": {"name": "python", "parameters": {"type": "object"}}}]}`
	r := post(t, url+"/v1/chat/completions", body)
	c := choices(t, r)
	msg := c[0]["message"].(map[string]any)
	if msg["role"] != "assistant" || !strings.HasPrefix(msg["content"].(string), "<reason>") {
		t.Errorf("message %v", msg)
	}
	content := c[0]["logprobs"].(map[string]any)["content"].([]any)
	if n := len(content); n != int(r.body["usage"].(map[string]any)["completion_tokens"].(float64)) {
		t.Errorf("%d logprobs", n)
	}
	if alts := content[0].(map[string]any)["top_logprobs"].([]any); len(alts) != 2 {
		t.Errorf("top_logprobs %v", alts)
	}
}

// Chat logprobs' "bytes" are each token's own bytes, also for tokens holding part of a multi-byte
// character (the byte tokenizer of the fixture makes every byte ≥ 0x80 such a token), so that
// joined they are the content's bytes; "token" stays the decoded (lossy) text.
func TestChatLogprobBytes(t *testing.T) {
	url := startServer(t, engine.Options{KVTokens: 4096, MaxSeqs: 4})
	tok, err := tokenizer.Load(testmodel.TinyDir(t))
	if err != nil {
		t.Fatal(err)
	}
	r := post(t, url+"/v1/chat/completions", `{"messages": [{"role": "user", "content": "héllo wörld"}], "max_tokens": 48,
		"seed": 3, "ignore_eos": true, "logprobs": true, "top_logprobs": 3, "return_token_ids": true}`)
	c := choices(t, r)[0]
	ids := c["token_ids"].([]any)
	content := c["logprobs"].(map[string]any)["content"].([]any)
	if len(ids) != len(content) || len(ids) == 0 {
		t.Fatalf("%d ids, %d logprobs", len(ids), len(content))
	}
	asBytes := func(v any) []byte {
		var b []byte
		for _, x := range v.([]any) {
			b = append(b, byte(x.(float64)))
		}
		return b
	}
	partial, partialAlts := 0, 0
	for i, e := range content {
		e := e.(map[string]any)
		want, _ := tok.TokenBytes(int32(ids[i].(float64)))
		got := asBytes(e["bytes"])
		if !bytes.Equal(got, want) {
			t.Errorf("token %d (id %v, %q): bytes %v, want %v", i, ids[i], e["token"], got, want)
		}
		if e["token"] != tok.Decode([]int32{int32(ids[i].(float64))}) {
			t.Errorf("token %d: text %q", i, e["token"])
		}
		if !utf8.Valid(want) {
			partial++
		}
		for _, a := range e["top_logprobs"].([]any) {
			a := a.(map[string]any)
			b := asBytes(a["bytes"])
			if bytes.Equal(b, []byte("\uFFFD")) {
				t.Errorf("token %d: alternative %q has the replacement character's bytes", i, a["token"])
			}
			if !utf8.Valid(b) {
				partialAlts++
			}
		}
	}
	if partial == 0 || partialAlts == 0 {
		t.Fatalf("%d generated and %d alternative tokens were part of a multi-byte character; pick another seed", partial, partialAlts)
	}
}

// A streamed completion sends the same text as the plain one with the same seed.
func TestStreaming(t *testing.T) {
	url := startServer(t, engine.Options{KVTokens: 4096, MaxSeqs: 4})
	plain := choices(t, post(t, url+"/v1/completions", `{"prompt": "abc", "max_tokens": 10, "seed": 9, "ignore_eos": true}`))[0]["text"]
	for _, path := range []string{"/v1/completions", "/v1/chat/completions"} {
		body := `{"prompt": "abc", "max_tokens": 10, "seed": 9, "ignore_eos": true, "stream": true}`
		if path != "/v1/completions" {
			body = `{"messages": [{"role": "user", "content": "abc"}], "max_tokens": 10, "seed": 9, "stream": true}`
		}
		res, err := http.Post(url+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		var text strings.Builder
		done, finish := false, ""
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			line, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			if line == "[DONE]" {
				done = true
				break
			}
			var chunk struct {
				Choices []struct {
					Text  string `json:"text"`
					Delta struct {
						Content string `json:"content"`
					} `json:"delta"`
					FinishReason *string `json:"finish_reason"`
				} `json:"choices"`
			}
			if err := json.Unmarshal([]byte(line), &chunk); err != nil || len(chunk.Choices) != 1 {
				t.Fatalf("chunk %q: %v", line, err)
			}
			text.WriteString(chunk.Choices[0].Text + chunk.Choices[0].Delta.Content)
			if chunk.Choices[0].FinishReason != nil {
				finish = *chunk.Choices[0].FinishReason
			}
		}
		res.Body.Close()
		if !done || finish == "" {
			t.Errorf("%s: stream ended without [DONE] or finish_reason", path)
		}
		if path == "/v1/completions" && text.String() != plain {
			t.Errorf("streamed %q, plain %q", text.String(), plain)
		}
	}
}

// curl, the OpenAI client every user has, gets a completion.
func TestCurl(t *testing.T) {
	curl := testenv.Command(t, "curl", "apt-get install curl")
	url := startServer(t, engine.Options{KVTokens: 4096, MaxSeqs: 4})
	out, err := exec.Command(curl, "-sS", "--max-time", "60", url+"/v1/completions", "-H", "Content-Type: application/json",
		"-d", `{"model": "tiny", "prompt": "Hello", "max_tokens": 4}`).Output()
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Object  string `json:"object"`
		Choices []struct {
			Text string `json:"text"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(out), &r); err != nil || r.Object != "text_completion" || len(r.Choices) != 1 {
		t.Fatalf("curl got %s (%v)", out, err)
	}
}

func TestAssistantMessage(t *testing.T) {
	s := &Server{}
	for _, tc := range []struct {
		text, content, finish string
		call                  string
	}{
		{"<reason>plain answer", "<reason>plain answer", "stop", ""},
		{"<reason>let me run it\n<tool_call>\n{\"name\": \"python\", \"arguments\": {\"code\": \"1+1\"}}\n</tool_call>", "<reason>let me run it", "tool_calls", `{"code": "1+1"}`},
		{"<tool_call>{\"name\": \"python\", \"arguments\": {}}</tool_call>", "", "tool_calls", `{}`},
		{"<reason>x<tool_call>not json</tool_call>", "<reason>x<tool_call>not json</tool_call>", "stop", ""},
	} {
		msg, finish := s.assistantMessage(tc.text, "stop")
		content := msg.Content
		if content != tc.content || finish != tc.finish {
			t.Errorf("%q: content %q finish %q, want %q %q", tc.text, content, finish, tc.content, tc.finish)
		}
		if tc.call != "" {
			fn := msg.ToolCalls[0].Function
			if fn.Name != "python" || fn.Arguments != tc.call {
				t.Errorf("%q: call %v", tc.text, fn)
			}
		}
	}
}

// A client that disconnects in the middle of a stream frees its sequence and its KV memory.
func TestDisconnectFreesMemory(t *testing.T) {
	url := startServer(t, engine.Options{KVTokens: 4096, MaxSeqs: 4})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/completions",
		strings.NewReader(`{"prompt": "abc", "max_tokens": 3000, "ignore_eos": true, "stream": true}`))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(res.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	stats := func() engine.Stats {
		res, err := http.Get(url + "/stats")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var st engine.Stats
		json.NewDecoder(res.Body).Decode(&st)
		return st
	}
	if st := stats(); st.KVReserved == 0 {
		t.Fatalf("no KV reserved while streaming: %+v", st)
	}
	cancel()
	res.Body.Close()
	deadline := time.Now().Add(20 * time.Second)
	for stats().KVReserved != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("KV still reserved after the client left: %+v", stats())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
