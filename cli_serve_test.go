package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"gorstar/chat"
	"gorstar/config"
	"gorstar/exec"
)

// runApp runs the command line in-process with a context, stdin and captured output.
func runApp(ctx context.Context, stdin string, args ...string) (string, string, error) {
	var out, errOut bytes.Buffer
	app := newApp()
	app.Reader, app.Writer, app.ErrWriter = strings.NewReader(stdin), &out, &errOut
	err := app.RunContext(ctx, append([]string{"gorstar"}, args...))
	return out.String(), errOut.String(), err
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// `gorstar serve` answers on loopback, `gorstar chat --endpoint` talks to it, and the server stops
// cleanly when its context ends.
func TestServeAndChatEndpoint(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tiny")
	if r := runCLI(t, "model", "init", "--out", dir, "--preset", "tiny"); r.Code != 0 {
		t.Fatalf("%+v", r)
	}
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() {
		_, _, err := runApp(ctx, "", "serve", "--model", dir, "--listen", addr, "--kv-tokens", "8192", "--quiet")
		served <- err
	}()
	url := "http://" + addr
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := http.Get(url + "/v1/models")
		if err == nil {
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if !strings.Contains(string(body), `"id":"tiny"`) {
				t.Fatalf("/v1/models: %s", body)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server did not come up: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	out, stderr, err := runApp(ctx, "hello\n/exit\n", "chat", "--endpoint", url, "--no-tools", "--max-tokens", "5", "--quiet")
	if err != nil {
		t.Fatalf("chat: %v (%s)", err, stderr)
	}
	if !strings.HasPrefix(out, "<reason>") {
		t.Errorf("chat printed %q", out)
	}
	// A wrong model name: the endpoint's message is shown and the session goes on.
	out, _, err = runApp(ctx, "hello\n", "chat", "--endpoint", url, "--served-model", "nope", "--no-tools", "--quiet")
	if err != nil || !strings.Contains(out, "does not exist") {
		t.Errorf("unknown served model: %v, %q", err, out)
	}
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("serve returned %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop")
	}
}

func TestChatWithLocalModel(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tiny")
	if r := runCLI(t, "model", "init", "--out", dir, "--preset", "tiny"); r.Code != 0 {
		t.Fatalf("%+v", r)
	}
	out, stderr, err := runApp(context.Background(), "2+2?\n/reset\nagain\n", "chat", "--model", dir, "--no-tools",
		"--max-tokens", "4", "--quiet", "--seed", "1")
	if err != nil {
		t.Fatalf("%v (%s)", err, stderr)
	}
	if strings.Count(out, "<reason>") != 2 || !strings.Contains(out, "(new conversation)") {
		t.Errorf("output %q", out)
	}
	if _, _, err := runApp(context.Background(), "", "chat", "--quiet"); err == nil {
		t.Error("chat without --model or --endpoint: no error")
	}
}

// scriptedModel stands in for a model: it answers each turn with the next text.
type scriptedModel struct{ texts []string }

func (s *scriptedModel) turn(_ context.Context, _ []chat.Message, out io.Writer) (chat.Message, error) {
	text := s.texts[0]
	s.texts = s.texts[1:]
	fmt.Fprint(out, text)
	return toAssistant(text), nil
}

// A tool call in an assistant turn runs in the sandbox and its output goes back to the model.
func TestChatLoopRunsToolCalls(t *testing.T) {
	cfg := config.DefaultExec()
	cfg.Workers = 1
	pool, err := exec.NewPool(context.Background(), cfg)
	if err != nil {
		t.Skipf("skipped: no Python sandbox here: %v", err)
	}
	defer pool.Close()
	call, _ := json.Marshal(map[string]any{"name": "python", "arguments": map[string]string{"code": "print(6*7)"}})
	m := &scriptedModel{texts: []string{"<reason>compute\n<tool_call>\n" + string(call) + "\n</tool_call>", "<reason>it is 42"}}
	var out bytes.Buffer
	err = chatLoop(context.Background(), m, pool, strings.NewReader("what is 6*7?\n"), &out, chatSettings{maxTurns: 4, toolChars: 256})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "[tool] 42") || !strings.Contains(out.String(), "it is 42") {
		t.Errorf("output %q", out.String())
	}
}

func TestGenerateBench(t *testing.T) {
	app := &cli.App{Flags: globalFlags(), Writer: &bytes.Buffer{}, Action: func(c *cli.Context) error {
		o, err := globalOptions(c)
		if err != nil {
			return err
		}
		return generateBench(c, o, "", "tiny", 2, 4, 3, false)
	}}
	var out bytes.Buffer
	app.Writer = &out
	if err := app.Run([]string{"x", "--json"}); err != nil {
		t.Fatal(err)
	}
	var res struct {
		Generate []generateRow `json:"generate"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || len(res.Generate) != 1 || res.Generate[0].TokensPerS <= 0 {
		t.Fatalf("output %s: %v", out.String(), err)
	}
}
