package serve

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"gorstar/engine"
)

// A matched stop string is cut from the text and named in stop_reason, as vLLM does; with
// include_stop_str_in_output (or SGLang's no_stop_trim) it stays; a stop_token_ids stop is named
// by its id; the ids keep the stop either way.
func TestStopReasonAndIncludeStop(t *testing.T) {
	url := startServer(t, engine.Options{KVTokens: 4096, MaxSeqs: 4})
	free := choices(t, post(t, url+"/v1/completions", `{"prompt": "abc", "max_tokens": 40, "seed": 4, "ignore_eos": true}`))[0]["text"].(string)
	stop := ""
	for i := 3; i+2 <= len(free) && stop == ""; i++ {
		if s := free[i : i+2]; s[0] > ' ' && s[0] < 127 && s[1] > ' ' && s[1] < 127 && strings.Index(free, s) == i {
			stop = s
		}
	}
	if stop == "" {
		t.Fatalf("no ASCII pair to stop at in %q", free)
	}
	before := free[:strings.Index(free, stop)]
	for _, c := range []struct{ flag, text string }{
		{"", before}, {`, "include_stop_str_in_output": true`, before + stop}, {`, "no_stop_trim": true`, before + stop},
	} {
		body := fmt.Sprintf(`{"prompt": "abc", "max_tokens": 40, "seed": 4, "ignore_eos": true, "stop": [%q], "return_token_ids": true%s}`, stop, c.flag)
		ch := choices(t, post(t, url+"/v1/completions", body))[0]
		if ch["text"] != c.text || ch["stop_reason"] != stop || ch["finish_reason"] != "stop" {
			t.Errorf("%s: text %q, stop_reason %v; want %q and %q", c.flag, ch["text"], ch["stop_reason"], c.text, stop)
		}
	}
	var ids struct {
		Choices []struct {
			TokenIDs []int32 `json:"token_ids"`
		} `json:"choices"`
	}
	r := post(t, url+"/v1/completions", `{"prompt": "abc", "max_tokens": 5, "seed": 4, "ignore_eos": true, "return_token_ids": true}`)
	if err := json.Unmarshal([]byte(r.raw), &ids); err != nil || len(ids.Choices) != 1 || len(ids.Choices[0].TokenIDs) != 5 {
		t.Fatalf("%s (%v)", r.raw, err)
	}
	third := ids.Choices[0].TokenIDs[2]
	ch := choices(t, post(t, url+"/v1/completions", fmt.Sprintf(`{"prompt": "abc", "max_tokens": 5, "seed": 4, "ignore_eos": true, "stop_token_ids": [%d]}`, third)))[0]
	if ch["stop_reason"] != float64(third) || ch["finish_reason"] != "stop" {
		t.Errorf("stop token %d: stop_reason %v, finish %v", third, ch["stop_reason"], ch["finish_reason"])
	}
	ch = choices(t, post(t, url+"/v1/completions", `{"prompt": "abc", "max_tokens": 5, "seed": 4, "ignore_eos": true}`))[0]
	if v, ok := ch["stop_reason"]; !ok || v != nil || ch["finish_reason"] != "length" {
		t.Errorf("length: stop_reason %v (present %v), finish %v", v, ok, ch["finish_reason"])
	}
}

// stream_options.include_usage ends both streams with a chunk of no choices and the usage; the
// chunks before it carry none.
func TestStreamIncludeUsage(t *testing.T) {
	url := startServer(t, engine.Options{KVTokens: 4096, MaxSeqs: 4})
	for _, c := range []struct{ path, body string }{
		{"/v1/completions", `{"prompt": "abc", "max_tokens": 7, "n": 2, "seed": 9, "ignore_eos": true, "stream": true, "stream_options": {"include_usage": true}}`},
		{"/v1/chat/completions", `{"messages": [{"role": "user", "content": "abc"}], "max_tokens": 7, "seed": 9, "stream": true, "stream_options": {"include_usage": true}}`},
	} {
		res, err := http.Post(url+c.path, "application/json", strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		var chunks []map[string]any
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			line, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok || line == "[DONE]" {
				continue
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatal(err)
			}
			chunks = append(chunks, m)
		}
		res.Body.Close()
		if len(chunks) < 2 {
			t.Fatalf("%s: %d chunks", c.path, len(chunks))
		}
		last := chunks[len(chunks)-1]
		u, _ := last["usage"].(map[string]any)
		if ch, _ := last["choices"].([]any); len(ch) != 0 || u == nil || u["prompt_tokens"].(float64) < 1 ||
			u["total_tokens"] != u["prompt_tokens"].(float64)+u["completion_tokens"].(float64) {
			t.Errorf("%s: last chunk %v, want no choices and the usage", c.path, last)
		}
		generated := 7.0
		if c.path == "/v1/completions" {
			generated = 14 // n = 2, ignore_eos: 7 each
		}
		if c.path == "/v1/completions" && u["completion_tokens"] != generated {
			t.Errorf("%s: completion_tokens %v, want %v", c.path, u["completion_tokens"], generated)
		}
		for _, ch := range chunks[:len(chunks)-1] {
			if v := ch["usage"]; v != nil {
				t.Errorf("%s: a chunk before the last has usage %v", c.path, v)
				break
			}
		}
	}
}
