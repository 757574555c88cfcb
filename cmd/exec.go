package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"gorstar/internal/progress"
	"gorstar/internal/tooloptions"
	"gorstar/internal/usererr"
	"gorstar/pytool"
)

func execCommand() *cli.Command {
	sandboxFlag := &cli.StringFlag{Name: "sandbox", Usage: "auto | bwrap | namespaces | seatbelt | none (none runs code WITHOUT isolation; overrides exec.sandbox)"}
	workersFlag := &cli.IntFlag{Name: "workers", Usage: "warm workers (overrides exec.workers; 0 = 2 per core)"}
	return &cli.Command{
		Name:  "exec",
		Usage: "the sandboxed Python tool: run one call, serve calls over HTTP, benchmark",
		Subcommands: []*cli.Command{
			{
				Name:      "run",
				Usage:     "run Python code in the sandbox and print the tool response the model would see",
				ArgsUsage: "[FILE.py | -]",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "code", Usage: "the Python source (instead of FILE)"},
					&cli.StringFlag{Name: "stdin", Usage: "standard input of the code"},
					&cli.StringFlag{Name: "timeout", Usage: "wall-clock limit, e.g. 4s (default exec.timeout)"},
					&cli.StringFlag{Name: "memory", Usage: "address space above the warm worker, e.g. 384MB or 1GB (default exec.memory_mb)"},
					&cli.IntFlag{Name: "max-chars", Usage: "cut the printed response to `N` characters (default rollout.tool_text_chars; 0 = no cut)"},
					sandboxFlag,
				},
				Action: execRun,
			},
			{
				Name:  "serve",
				Usage: "serve tool calls over HTTP: POST /v1/run, POST /v1/batch, GET /healthz, GET /metrics",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "listen", Value: "127.0.0.1:8090", Usage: "address to listen on"},
					workersFlag, sandboxFlag,
				},
				Action: execServe,
			},
			{
				Name: "bench",
				Usage: "throughput and latency of the warm pool against one fresh interpreter per call (code-judge's design), " +
					"or of remote servers with --endpoint; --calls N runs the load test",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "workload", Value: "print", Usage: "print, comb, sympy, mixed, or a comma list (--json then prints {\"workloads\": [...]})"},
					&cli.IntFlag{Name: "concurrency", Value: 64, Usage: "calls kept in flight"},
					&cli.DurationFlag{Name: "duration", Value: 10 * time.Second, Usage: "how long to run each workload on each runner"},
					&cli.StringSliceFlag{Name: "endpoint", Usage: "bench `URL` (an exec serve node; repeatable) instead of a local pool"},
					&cli.BoolFlag{Name: "baseline", Value: true, Usage: "also run one fresh interpreter per call, side by side (local only)"},
					&cli.IntFlag{Name: "calls", Usage: "load test: send exactly N distinct calls with --concurrency in flight and check none is lost or duplicated"},
					&cli.DurationFlag{Name: "timeout", Value: 30 * time.Second, Usage: "wall-clock limit per call, the same for both runners " +
						"(generous: a saturated machine slows every call, and the bench measures throughput, not the limit)"},
					workersFlag, sandboxFlag,
				},
				Action: execBench,
			},
		},
	}
}

// execConfig resolves the [exec] section with this command's overrides into the tool's options.
func execConfig(c *cli.Context) (Options, pytool.Options, error) {
	o, err := globalOptions(c)
	if err != nil {
		return o, pytool.Options{}, err
	}
	cfg, err := execConfigOf(c, o)
	return o, cfg, err
}

// execConfigOf is execConfig for a command that has its global options already.
func execConfigOf(c *cli.Context, o Options) (pytool.Options, error) {
	cfg := o.Config.Exec
	if c.IsSet("sandbox") {
		cfg.Sandbox = c.String("sandbox")
	}
	if c.IsSet("workers") {
		cfg.Workers = c.Int("workers")
	}
	if err := cfg.Validate(); err != nil {
		return pytool.Options{}, usererr.Wrap(err)
	}
	if err := checkWorkers(cfg.Workers); err != nil {
		return pytool.Options{}, err
	}
	return tooloptions.From(cfg), nil
}

// startPool starts the pool and says loudly when code runs without isolation.
func startPool(ctx context.Context, c *cli.Context, o Options, cfg pytool.Options, opts ...pytool.PoolOption) (*pytool.Pool, error) {
	bar := progress.New(int64(pytool.PoolSize(cfg)), "exec: starting workers",
		progress.Options{Out: c.App.ErrWriter, Quiet: o.Quiet, TerminalOnly: true})
	t0 := time.Now()
	opts = append(opts, pytool.OnWorkerStarted(func(done, _ int) { bar.Set(int64(done)) }))
	p, err := pytool.NewPool(ctx, cfg, opts...)
	bar.Finish()
	if errors.Is(err, pytool.ErrNoSandbox) {
		return nil, usererr.New("exec: %v", err)
	}
	if err != nil {
		return nil, err
	}
	stderr := c.App.ErrWriter
	if p.Sandbox() == pytool.SandboxNone {
		fmt.Fprintln(stderr, "gorstar: WARNING: --sandbox=none: tool code runs WITHOUT isolation, with your user's rights, network and files.")
	}
	if !o.Quiet {
		fmt.Fprintf(stderr, "exec: %d warm workers in %.1f s, sandbox %s, python %s\n", p.Workers(),
			time.Since(t0).Seconds(), p.Sandbox(), p.Python())
		if m := p.MissingModules(); len(m) > 0 {
			fmt.Fprintf(stderr, "exec: not installed, not pre-imported: %s\n", strings.Join(m, ", "))
		}
	}
	return p, nil
}

// startTools connects to the exec serve nodes of exec.endpoints when it names any (warning about
// those that do not answer), else starts a pool of workers here (startPool, with opts).
func startTools(ctx context.Context, c *cli.Context, o Options, cfg pytool.Options, opts ...pytool.PoolOption) (pytool.Tools, error) {
	if len(cfg.Endpoints) == 0 {
		p, err := startPool(ctx, c, o, cfg, opts...)
		if err != nil {
			return nil, err // not a Tools holding a nil *Pool
		}
		return p, nil
	}
	stderr := c.App.ErrWriter
	tools, err := pytool.Open(ctx, cfg, func(s string) { fmt.Fprintf(stderr, "gorstar: warning: %s\n", s) })
	if err != nil {
		return nil, err
	}
	if !o.Quiet {
		fmt.Fprintf(stderr, "exec: tool calls go to %d exec serve node(s): %s\n", len(cfg.Endpoints),
			strings.Join(cfg.Endpoints, ", "))
	}
	return tools, nil
}

func execRun(c *cli.Context) error {
	o, cfg, err := execConfig(c)
	if err != nil {
		return err
	}
	if err := inRange("--max-chars", c.Int("max-chars"), 0, 1<<30); err != nil {
		return err
	}
	call, err := execRunCall(c)
	if err != nil {
		return err
	}
	cfg.Workers = 1
	cfg.QueueSize = 1
	p, err := startPool(c.Context, c, Options{Quiet: true}, cfg)
	if err != nil {
		return err
	}
	defer p.Close()
	res := p.Run(c.Context, call)
	if res.Status == pytool.StatusInternal {
		return fmt.Errorf("exec run: %s", strings.TrimSpace(res.Stderr))
	}
	if o.JSON {
		return printJSON(c, res)
	}
	max := o.Config.Rollout.ToolTextChars
	if c.IsSet("max-chars") {
		max = c.Int("max-chars")
	}
	fmt.Fprintln(c.App.Writer, res.ToolText(max))
	return nil
}

// execRunCall is the call of `exec run`: the code from --code, a FILE or stdin ("-"), with its
// limits.
func execRunCall(c *cli.Context) (pytool.Call, error) {
	var err error
	call := pytool.Call{Stdin: c.String("stdin")}
	switch {
	case c.IsSet("code") && c.NArg() > 0:
		return call, usererr.New("exec run: give the code with --code or as a FILE, not both")
	case c.IsSet("code"):
		call.Code = c.String("code")
	case c.NArg() == 1:
		var data []byte
		if c.Args().First() == "-" {
			data, err = io.ReadAll(os.Stdin)
		} else {
			data, err = os.ReadFile(c.Args().First())
		}
		if err != nil {
			return call, usererr.New("exec run: %v", err)
		}
		call.Code = string(data)
	default:
		return call, usererr.New("exec run: give the code with --code STR or as one FILE argument (see `gorstar exec run --help`)")
	}
	if s := c.String("timeout"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return call, usererr.New("exec run --timeout: want a positive duration like 4s, got %q", s)
		}
		call.TimeoutS = d.Seconds()
	}
	if s := c.String("memory"); s != "" {
		mb, err := parseMegabytes(s)
		if err != nil {
			return call, usererr.New("exec run --memory: %v", err)
		}
		call.MemoryMB = mb
	}
	return call, nil
}

// parseMegabytes reads 384, 384MB, 384M, 1GB or 1G as mebibytes.
func parseMegabytes(s string) (int, error) {
	u := strings.ToUpper(strings.TrimSpace(s))
	mult := 1.0
	switch {
	case strings.HasSuffix(u, "GB"), strings.HasSuffix(u, "G"):
		mult, u = 1024, strings.TrimRight(u, "GB")
	case strings.HasSuffix(u, "MB"), strings.HasSuffix(u, "M"):
		u = strings.TrimRight(u, "MB")
	}
	v, err := strconv.ParseFloat(u, 64)
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("want a size like 384MB or 1GB, got %q", s)
	}
	return int(v * mult), nil
}

func execServe(c *cli.Context) error {
	o, cfg, err := execConfig(c)
	if err != nil {
		return err
	}
	p, err := startPool(c.Context, c, o, cfg)
	if err != nil {
		return err
	}
	defer p.Close()
	addr := c.String("listen")
	err = pytool.Serve(c.Context, addr, p, func(a net.Addr) {
		if !o.Quiet {
			fmt.Fprintf(c.App.ErrWriter, "exec: serving on http://%s (Ctrl-C finishes the calls in flight and stops)\n", a)
		}
	})
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "listen" {
			return usererr.New("exec serve --listen %s: %v", addr, op.Err)
		}
		return err
	}
	if o.JSON {
		return printJSON(c, map[string]any{"listen": addr, "calls": p.Stats().Calls(), "worker_restarts": p.Stats().Restarts()})
	}
	return nil
}

func execBench(c *cli.Context) error {
	o, so, client, err := execBenchOptions(c)
	if err != nil {
		return err
	}
	if p, ok := so.Runner.(*pytool.Pool); ok {
		defer p.Close()
	}
	if n := c.Int("calls"); n > 0 {
		return execLoadTest(c, o, so.Runner, client, n)
	}
	reports, err := pytool.BenchSuite(c.Context, so)
	if err != nil {
		return err
	}
	if o.JSON {
		if len(reports) == 1 {
			return printJSON(c, reports[0])
		}
		return printJSON(c, map[string]any{"workloads": reports})
	}
	printBenchSuite(c.App.Writer, reports)
	return nil
}

// execBenchOptions checks the flags of `exec bench` and starts its runner: a local pool, or a
// client of the --endpoint servers (then also returned).
func execBenchOptions(c *cli.Context) (Options, pytool.SuiteOptions, *pytool.Client, error) {
	o, cfg, err := execConfig(c)
	so := pytool.SuiteOptions{Name: "pool", Concurrency: c.Int("concurrency"), Duration: c.Duration("duration"),
		Progress: progress.Options{Quiet: o.Quiet}}
	if err != nil {
		return o, so, nil, err
	}
	if c.Duration("timeout") <= 0 {
		return o, so, nil, usererr.New("exec bench --timeout: must be positive, got %s", c.Duration("timeout"))
	}
	cfg.Timeout = c.Duration("timeout")
	for _, wl := range strings.Split(c.String("workload"), ",") {
		if _, ok := pytool.Workloads[strings.TrimSpace(wl)]; !ok {
			return o, so, nil, usererr.New("exec bench --workload: want print, comb, sympy or mixed (or a comma list), got %q", wl)
		}
		so.Workloads = append(so.Workloads, strings.TrimSpace(wl))
	}
	if err := inRange("--concurrency", so.Concurrency, 1, 1<<16); err != nil {
		return o, so, nil, err
	}
	if c.IsSet("calls") {
		if err := inRange("--calls", c.Int("calls"), 1, 1<<30); err != nil {
			return o, so, nil, err
		}
	}
	if so.Duration <= 0 {
		return o, so, nil, usererr.New("--duration: must be positive, got %s", so.Duration)
	}
	if c.IsSet("calls") && c.IsSet("duration") {
		return o, so, nil, usererr.New("exec bench: --duration does not apply to a load test (--calls)")
	}
	if !o.Quiet {
		so.Log = func(s string) { fmt.Fprintln(c.App.ErrWriter, s) }
	}
	if endpoints := c.StringSlice("endpoint"); len(endpoints) > 0 {
		client, err := pytool.NewClient(endpoints)
		if err != nil {
			return o, so, nil, err
		}
		so.Runner, so.Name = client, "client"
		return o, so, client, client.WaitReady(c.Context, c.Duration("timeout"))
	}
	p, err := startPool(c.Context, c, o, cfg)
	if err != nil {
		return o, so, nil, err
	}
	so.Runner = p
	if c.Bool("baseline") {
		so.Baseline, so.BaselineWorkers = &cfg, p.Workers()
	}
	return o, so, nil, nil
}

// printBenchSuite prints the reports of `exec bench` as a table.
func printBenchSuite(w io.Writer, reports []pytool.SuiteReport) {
	fmt.Fprintf(w, "%-8s %-26s %9s %10s %9s %9s %9s %7s", "workload", "runner", "calls", "calls/s", "p50 ms", "p90 ms", "p99 ms", "errors")
	if len(reports) > 0 && reports[0].CPUMSPerCall > 0 {
		fmt.Fprintf(w, " %11s %13s", "cpu ms/call", "in call's own")
	}
	fmt.Fprintln(w)
	for _, r := range reports {
		line := func(label string, b pytool.BenchResult) {
			fmt.Fprintf(w, "%-8s %-26s %9d %10.1f %9.1f %9.1f %9.1f %7d", b.Workload, label, b.Calls, b.CallsPerS, b.P50MS, b.P90MS, b.P99MS, b.Errors)
			if b.CPUMSPerCall > 0 {
				fmt.Fprintf(w, " %11.2f %13.2f", b.CPUMSPerCall, b.CallCPUMSPerCall)
			}
			fmt.Fprintln(w)
		}
		line(r.Runner, r.BenchResult)
		if r.Baseline != nil {
			line("fresh python, no sandbox", *r.Baseline)
			fmt.Fprintf(w, "%-8s %-26s %9s %9.1fx\n", r.Workload, "speed-up", "", r.SpeedUp)
		}
	}
	for _, r := range reports {
		if r.CallCPUBoundPerS > 0 {
			fmt.Fprintf(w, "%s: %.2f ms of CPU per call ran in the calls' own processes (their code, page faults and exit), so %d cores cannot run more than %.0f calls/s of it, however little the pool itself costs\n",
				r.Workload, r.CallCPUMSPerCall, runtime.NumCPU(), r.CallCPUBoundPerS)
		}
	}
}

// execLoadTest sends exactly n distinct calls and checks every answer (the 45K-calls test); with a
// client, the servers' health (peak memory) is reported too.
func execLoadTest(c *cli.Context, o Options, runner pytool.Runner, client *pytool.Client, n int) error {
	inFlight := c.Int("concurrency")
	if !o.Quiet {
		fmt.Fprintf(c.App.ErrWriter, "load test: %d calls, %d in flight\n", n, inFlight)
	}
	res, err := pytool.LoadTest(c.Context, runner, n, inFlight)
	if err != nil {
		return err
	}
	out := map[string]any{"load": res}
	var servers []map[string]any
	if client != nil {
		servers = client.Health(c.Context)
	}
	if len(servers) > 0 {
		out["servers"] = servers
	}
	if o.JSON {
		return printJSON(c, out)
	}
	fmt.Fprintf(c.App.Writer, "%d calls, %d in flight: %.1f s, %.0f calls/s, p50 %.1f ms, p99 %.1f ms, lost %d, duplicated %d, errors %d\n",
		res.Calls, res.InFlight, res.Seconds, res.CallsPerS, res.P50MS, res.P99MS, res.Lost, res.Duplicated, res.Errors)
	for _, s := range servers {
		fmt.Fprintf(c.App.Writer, "server %v: peak RSS %v MiB\n", s["url"], s["peak_rss_mb"])
	}
	if res.Lost > 0 || res.Duplicated > 0 {
		return fmt.Errorf("exec load test: %d calls lost, %d duplicated", res.Lost, res.Duplicated)
	}
	return nil
}
