package cmd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v2"

	"gorstar/chat"
	"gorstar/engine"
	"gorstar/internal/usererr"
	"gorstar/model"
	"gorstar/serve"
)

// engineFlags size the generation engine (serve and chat).
func engineFlags() []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: "kv-tokens", Usage: "KV cache budget in tokens over all sequences; admission never evicts (default 65536, less when over 4 GiB)"},
		&cli.IntFlag{Name: "max-seqs", Value: 64, Usage: "sequences decoded together at most (the largest decode batch)"},
		&cli.IntFlag{Name: "step-tokens", Value: 512, Usage: "tokens per forward step (decodes first, then prefill chunks)"},
		&cli.StringFlag{Name: "template", Usage: "chat template: a built-in name (rstar2, chatml) or a file (default rollout.template)"},
		&cli.StringFlag{Name: "primer", Value: "<reason>", Usage: "text each generated assistant turn starts with (\"\" for none)"},
	}
}

func serveCommand() *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "serve a model over an OpenAI-compatible HTTP API (/v1/completions, /v1/chat/completions, /v1/models)",
		Flags: withRenamed(append([]cli.Flag{
			&cli.StringFlag{Name: "model", Required: true, Usage: "Hugging Face model `DIR`"},
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:8000", Usage: "address to listen on (loopback by default)"},
			&cli.StringFlag{Name: "served-model", Usage: "model id clients use (default: the directory's name)"},
			&cli.IntFlag{Name: "max-waiting", Value: 1024, Usage: "requests queued for KV memory before answering 429 (0 = no limit)"},
		}, engineFlags()...), map[string][]string{"served-model": {"served-model-name"}}),
		Action: serveAction,
	}
}

// loadPolicy sets up the kernels and loads dir with its template, ready to generate, on an engine
// sized by the engine flags.
func loadPolicy(c *cli.Context, o Options, dir string, maxWaiting int) (*engine.Policy, error) {
	if err := checkModelDir("--model", dir); err != nil {
		return nil, err
	}
	if err := initKernels(o); err != nil {
		return nil, err
	}
	tmpl, err := commandTemplate(c, o)
	if err != nil {
		return nil, err
	}
	if err := checkEngineFlags(c, dir, model.PrecisionOf(o.Config.Model.DType)); err != nil {
		return nil, err
	}
	return engine.LoadPolicy(dir, engine.PolicyOptions{Template: tmpl, Primer: c.String("primer"),
		Engine: engine.Options{KVTokens: c.Int("kv-tokens"), MaxSeqs: c.Int("max-seqs"), StepTokens: c.Int("step-tokens"),
			MaxWaiting: maxWaiting, Seed: uint64(o.Seed), Precision: model.PrecisionOf(o.Config.Model.DType)}})
}

// commandTemplate is the chat template of --template, else rollout.template: SFT, RL, eval and
// serve render the same system turn.
func commandTemplate(c *cli.Context, o Options) (*chat.Template, error) {
	name := templateName(c, o)
	tmpl, err := chat.LoadTemplate(name)
	if err != nil {
		return nil, usererr.New("--template %s: %v", name, err)
	}
	return tmpl, nil
}

// templateName is --template, else rollout.template.
func templateName(c *cli.Context, o Options) string {
	if name := c.String("template"); name != "" {
		return name
	}
	return o.Config.Rollout.Template
}

// checkEngineFlags checks the engine flags' ranges, each with its own message, and refuses an
// engine whose KV cache and step buffers would not fit in memory.
func checkEngineFlags(c *cli.Context, dir string, p model.Precision) error {
	kv, seqs, step := c.Int("kv-tokens"), c.Int("max-seqs"), c.Int("step-tokens")
	if err := firstErr(
		inRange("--kv-tokens", kv, 0, 1<<30),
		inRange("--max-seqs", seqs, 1, 4096),
		inRange("--step-tokens", step, 1, 1<<16),
	); err != nil {
		return err
	}
	cfg, err := model.LoadConfig(dir)
	if err != nil {
		return err
	}
	if kv == 0 { // the engine's default: 65536 tokens or 4 GiB of cache, at least one context
		kv = engine.DefaultKVTokens(cfg, p)
	}
	need := engine.MemoryBytes(cfg, p, kv, seqs, max(step, seqs))
	// Name the one flag whose share of the memory is the largest: lowering it helps most.
	shares := []struct {
		flag  string
		value int
		bytes int64
	}{
		{"--kv-tokens", kv, engine.MemoryBytes(cfg, p, kv, 0, 0)},
		{"--max-seqs", seqs, engine.MemoryBytes(cfg, p, 0, seqs, 0)},
		{"--step-tokens", step, engine.MemoryBytes(cfg, p, 0, 0, max(step, seqs))},
	}
	top := shares[0]
	for _, s := range shares[1:] {
		if s.bytes > top.bytes {
			top = s
		}
	}
	return checkMemory(fmt.Sprintf("%s %d: the engine", top.flag, top.value), need, top.flag)
}

func serveAction(c *cli.Context) error {
	o, err := globalOptions(c)
	if err != nil {
		return err
	}
	dir := c.String("model")
	if err := inRange("--max-waiting", c.Int("max-waiting"), 0, 1<<20); err != nil {
		return err
	}
	p, err := loadPolicy(c, o, dir, c.Int("max-waiting"))
	if err != nil {
		return err
	}
	defer p.Close()
	name := c.String("served-model")
	if name == "" {
		name = filepath.Base(filepath.Clean(dir))
	}
	srv, err := serve.New(p.Engine, p.Tokenizer, serve.Options{ModelName: name, Template: p.Template, Primer: p.Primer})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", c.String("listen"))
	if err != nil {
		return usererr.New("--listen %s: %v", c.String("listen"), err)
	}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 30 * time.Second}
	if !o.Quiet {
		opts := p.Engine.Options()
		fmt.Fprintf(c.App.ErrWriter, "serve: %s as %q on http://%s (context %d, KV budget %d tokens, up to %d sequences)\n",
			dir, name, ln.Addr(), opts.MaxContext, opts.KVTokens, opts.MaxSeqs)
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve on %s: %w", ln.Addr(), err)
	case <-c.Context.Done():
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p.Engine.Close() // ends running requests so Shutdown need not wait for long generations
	if err := hs.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("serve: shut down: %w", err)
	}
	return nil
}
