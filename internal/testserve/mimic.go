package testserve

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
)

// Behaviour is how a server answers /v1/completions, one documented trait at a time, after vLLM
// and SGLang: which fields return the generated ids, whether a matched stop string stays in the
// text and which field names it, and the failures a client must survive.
type Behaviour struct {
	Name string
	// IDs is how the generated ids come back: IDsTokenIDs (the choice's token_ids, asked with
	// return_token_ids: vLLM ≥ 0.10.2), IDsLogprobNames (logprob tokens named "token_id:ID", asked
	// with return_tokens_as_token_ids: older vLLM), or IDsNone (text only: SGLang's OpenAI API).
	IDs IDs
	// StopField names the choice field reporting the matched stop string or token id:
	// "stop_reason" (vLLM), "matched_stop" (SGLang), "" (not reported).
	StopField string
	// KeepStopFlag is the request field that keeps a matched stop string in the text:
	// "include_stop_str_in_output" (vLLM), "no_stop_trim" (SGLang), "" (the string is always cut).
	// Without it in the request the string is cut, as both servers do by default.
	KeepStopFlag string
	// Fail500 answers the first Fail500 completion requests with HTTP 500.
	Fail500 int
	// Drop cuts the connection halfway through the answer of the Drop completion requests after
	// those.
	Drop int
}

// IDs says how a server returns generated token ids.
type IDs int

const (
	IDsNone IDs = iota
	IDsTokenIDs
	IDsLogprobNames
)

// Behaviours are the variants tests run against: vLLM as its documentation describes it (with
// and without return_token_ids), SGLang's OpenAI-compatible API, a server that cuts the stop
// string and reports nothing, and vLLM failing with a 500 and with a dropped connection.
func Behaviours() []Behaviour {
	vllm := Behaviour{Name: "vllm", IDs: IDsTokenIDs, StopField: "stop_reason", KeepStopFlag: "include_stop_str_in_output"}
	old := vllm
	old.Name, old.IDs = "vllm-logprob-names", IDsLogprobNames
	text := vllm
	text.Name, text.IDs = "vllm-text", IDsNone
	sglang := Behaviour{Name: "sglang", IDs: IDsNone, StopField: "matched_stop", KeepStopFlag: "no_stop_trim"}
	cut := Behaviour{Name: "sglang-cuts-stop", IDs: IDsNone, StopField: "matched_stop"}
	bare := Behaviour{Name: "text-no-stop-reason", IDs: IDsNone}
	fail := vllm
	fail.Name, fail.Fail500 = "vllm-500", 2
	drop := vllm
	drop.Name, drop.Drop = "vllm-dropped", 2
	return []Behaviour{vllm, old, text, sglang, cut, bare, fail, drop}
}

// gorstarOnly are request fields only gorstar serve knows; the servers mimicked ignore them.
var gorstarOnly = []string{"sampler_seed", "sampler_skip"}

// Mimic serves inner (a gorstar serve handler over a real model) the way b describes: requests
// are rewritten to what that server would act on, answers to what it would send.
func Mimic(inner http.Handler, b Behaviour) http.Handler {
	var n atomic.Int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/completions" || r.Method != http.MethodPost {
			inner.ServeHTTP(w, r)
			return
		}
		k := int(n.Add(1))
		if k <= b.Fail500 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = io.WriteString(w, `{"object":"error","message":"Internal Server Error","type":"InternalServerError","code":500}`)
			return
		}
		body, err := b.request(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rec := httptest.NewRecorder()
		ir := r.Clone(r.Context())
		ir.Body, ir.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		inner.ServeHTTP(rec, ir)
		out := rec.Body.Bytes()
		if rec.Code == http.StatusOK {
			if out, err = b.answer(out); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
		}
		if k <= b.Fail500+b.Drop {
			dropHalfway(w, out)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rec.Code)
		_, _ = w.Write(out)
	})
}

// request rewrites a completion request to the fields the mimicked server acts on.
func (b Behaviour) request(r io.Reader) ([]byte, error) {
	var req map[string]any
	if err := json.NewDecoder(r).Decode(&req); err != nil {
		return nil, err
	}
	keep := b.KeepStopFlag != "" && req[b.KeepStopFlag] == true
	for _, f := range append(gorstarOnly, "include_stop_str_in_output", "no_stop_trim") {
		delete(req, f)
	}
	req["include_stop_str_in_output"] = keep
	if b.IDs != IDsTokenIDs {
		delete(req, "return_token_ids")
	}
	if b.IDs != IDsLogprobNames {
		delete(req, "return_tokens_as_token_ids")
	}
	return json.Marshal(req)
}

// answer renames or drops the stop report and drops what the server would not send.
func (b Behaviour) answer(data []byte) ([]byte, error) {
	var resp map[string]any
	if err := json.Unmarshal(data, &resp); err != nil {
		return nil, err
	}
	choices, _ := resp["choices"].([]any)
	for _, c := range choices {
		ch, _ := c.(map[string]any)
		reason := ch["stop_reason"]
		delete(ch, "stop_reason")
		if b.StopField != "" {
			ch[b.StopField] = reason
		}
		if b.IDs != IDsTokenIDs {
			delete(ch, "token_ids")
			delete(ch, "prompt_token_ids")
		}
	}
	return json.Marshal(resp)
}

// dropHalfway sends the status line, the headers and half the body, then closes the connection.
func dropHalfway(w http.ResponseWriter, body []byte) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic("testserve: the response writer cannot be hijacked")
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	_, _ = buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n")
	_, _ = buf.WriteString("Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n")
	_, _ = buf.Write(body[:len(body)/2])
	_ = buf.Flush()
}

// StartMimic serves the model of a running gorstar serve s as b on a free loopback port, closed
// when the test ends.
func StartMimic(t testing.TB, s *Server, b Behaviour) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: Mimic(s.hs.Handler, b)}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return "http://" + ln.Addr().String()
}
