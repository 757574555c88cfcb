package rl_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gorstar/engine"
	"gorstar/internal/rundir"
	"gorstar/internal/testenv"
	"gorstar/internal/testmodel"
	"gorstar/internal/testserve"
	"gorstar/internal/usererr"
	"gorstar/model"
	"gorstar/rl"
	"gorstar/serve"
)

// servedName is the model id the test servers list.
const servedName = "policy"

// serveOn runs a real gorstar serve over the model of dir on 127.0.0.1 and returns its URL; the
// server, engine and model are closed, in that order, when the test ends.
func serveOn(t *testing.T, dir string) string {
	t.Helper()
	return testserve.Start(t, dir, engine.Options{KVTokens: 8192, MaxSeqs: 16}, serve.Options{ModelName: servedName}).URL
}

// weightVersion asks a server for the version of the weights it serves (GET /get_weight_version).
func weightVersion(t *testing.T, url string) string {
	t.Helper()
	res, err := http.Get(url + "/get_weight_version")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var v struct {
		WeightVersion string `json:"weight_version"`
	}
	if err := json.NewDecoder(res.Body).Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v.WeightVersion
}

// pushAs makes a server load the weights of dir under the label version, as another client would.
func pushAs(url, dir, version string) error {
	body, _ := json.Marshal(map[string]string{"model_path": dir, "weight_version": version})
	res, err := http.Post(url+"/update_weights_from_disk", "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("update_weights_from_disk: HTTP %d", res.StatusCode)
	}
	return nil
}

// Rollouts on a real gorstar serve: the trainer pushes its weights before the first step and
// after each, so the server's version follows the steps and ends on the final model; the
// server's logprobs agree with the trainer's (same kernels), so no TIS weight is capped; a
// resumed run first pushes the checkpoint's weights to a fresh server; and a server whose weights
// someone else replaced fails the next step.
func TestRemoteRolloutsFollowTheTrainer(t *testing.T) {
	testenv.Short(t, "a whole RL run")
	pol := policyDir(t)
	problems := problemsFile(t, 20, 0)
	o := testOptions(pol, problems, filepath.Join(t.TempDir(), "out"))
	o.RL.Stages[0].Steps, o.RL.Stages[1].Steps = 1, 1 // checkpoints after steps 1 and 2
	url := serveOn(t, pol)
	o.Rollout.Endpoints, o.ServedModel = []string{url}, servedName
	res, err := rl.Run(context.Background(), o)
	skipWithoutSandbox(t, err)
	if err != nil {
		t.Fatal(err)
	}
	if res.Steps != 2 {
		t.Fatalf("%d steps, want 2", res.Steps)
	}
	recs, err := rundir.ReadMetrics(filepath.Join(o.Out, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 {
		t.Fatalf("%d metrics lines, want 2", len(recs))
	}
	trained := 0.0
	for i, r := range recs {
		t.Logf("step %d: reward %v, trained tokens %v, Δ logprob max %v, tis capped %v", i+1, r["reward_mean"],
			r["trained_tokens"], r["logprob_delta_max"], r["tis_capped_fraction"])
		trained += r["trained_tokens"].(float64)
		if d := r["logprob_delta_max"].(float64); d > 1e-3 {
			t.Errorf("step %d: the server's and the trainer's logprobs differ by %g", i+1, d)
		}
		if f, ok := r["tis_capped_fraction"].(float64); !ok || f != 0 {
			t.Errorf("step %d: tis_capped_fraction %v, want 0 (ratios ≈ 1, cap 2)", i+1, r["tis_capped_fraction"])
		}
	}
	if trained == 0 {
		t.Errorf("no token trained: the weights pushed would not differ")
	}
	if v := weightVersion(t, url); v != "2" {
		t.Errorf("the server serves weight version %q after 2 steps, want \"2\"", v)
	}
	start, _ := os.ReadFile(filepath.Join(pol, "model.safetensors"))
	final, _ := os.ReadFile(filepath.Join(o.Out, "model.safetensors"))
	pushed, _ := os.ReadFile(filepath.Join(o.Out, "weights", "model.safetensors"))
	if len(final) == 0 || bytes.Equal(start, final) || !bytes.Equal(pushed, final) {
		t.Errorf("final weights missing, unchanged, or not the last ones pushed (%d, %d bytes)", len(final), len(pushed))
	}

	// Resume from step 1 on a fresh server (the SFT weights, version "0"): its rollouts of step 2
	// must come from the checkpoint's weights, pushed as version 1.
	if err := os.RemoveAll(model.CheckpointPath(filepath.Join(o.Out, "checkpoints"), 2)); err != nil {
		t.Fatal(err)
	}
	fresh := serveOn(t, pol)
	r := o
	r.Resume, r.Rollout.Endpoints = true, []string{fresh}
	if res, err = rl.Run(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if v := weightVersion(t, fresh); res.Steps != 2 || v != "2" {
		t.Errorf("resumed run: %d steps, server at weight version %q; want 2 and \"2\"", res.Steps, v)
	}

	// Another client replaces the server's weights after step 1: step 2's rollouts are stale. A cap
	// below 1 caps every token's TIS weight (the ratios are 1): TIS is on for remote rollouts.
	other := serveOn(t, pol)
	s := o
	s.Out, s.Rollout.Endpoints = filepath.Join(t.TempDir(), "stale"), []string{other}
	s.RL.TISCap = 0.5
	s.Progress = func(p rl.Progress) {
		if err := pushAs(other, pol, "99"); err != nil {
			t.Error(err)
		}
	}
	_, err = rl.Run(context.Background(), s)
	if err == nil || !strings.Contains(err.Error(), "version 99") || !strings.Contains(err.Error(), "stale") {
		t.Errorf("a server with another's weights: %v, want an error about stale weights", err)
	}
	recs, err = rundir.ReadMetrics(filepath.Join(s.Out, "metrics.jsonl"))
	if err != nil || len(recs) != 1 || recs[0]["trained_tokens"] == 0.0 ||
		recs[0]["tis_capped_fraction"] != 1.0 {
		t.Errorf("rl.tis_cap 0.5: step 1's metrics %v (%v), want tis_capped_fraction 1", recs, err)
	}
}

// An endpoint that does not answer fails the run before anything loads or is written, with one
// line naming it.
func TestUnreachableEndpointFailsBeforeAnyStep(t *testing.T) {
	o := testOptions(testmodel.TinyDir(t), problemsFile(t, 4, 0), filepath.Join(t.TempDir(), "out"))
	o.Rollout.Endpoints = []string{"http://127.0.0.1:1"}
	o.Progress = func(rl.Progress) { t.Error("a step ran") }
	_, err := rl.Run(context.Background(), o)
	if err == nil || !usererr.Is(err) || !strings.Contains(err.Error(), "127.0.0.1:1") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("unreachable endpoint: %v, want a one-line user error naming it", err)
	}
	if _, serr := os.Stat(o.Out); !os.IsNotExist(serr) {
		t.Errorf("the refused run created its output directory")
	}
	t.Log(err)
}

// hookTargetEnv, set in a test's environment (which the weight hook inherits), turns the test
// binary into a weight hook: it posts the pushed directory and version to that server, as a
// script that reloads vLLM would, and appends the version to the file in hookLogEnv.
const hookTargetEnv, hookLogEnv = "GORSTAR_RL_TEST_HOOK_TARGET", "GORSTAR_RL_TEST_HOOK_LOG"

// runHook is the test binary run as the weight hook (TestMain).
func runHook() int {
	if err := pushAs(os.Getenv(hookTargetEnv), os.Getenv("GORSTAR_WEIGHTS_DIR"), os.Getenv("GORSTAR_WEIGHT_VERSION")); err != nil {
		fmt.Fprintln(os.Stderr, "hook:", err)
		return 1
	}
	f, err := os.OpenFile(os.Getenv(hookLogEnv), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, "hook:", err)
		return 1
	}
	defer f.Close()
	fmt.Fprintf(f, "%s %s\n", os.Getenv("GORSTAR_ENDPOINT"), os.Getenv("GORSTAR_WEIGHT_VERSION"))
	return 0
}

// A server without /update_weights_from_disk (vLLM's case: here a proxy in front of gorstar serve
// that answers 404 there) gets each push through rollout.weight_hook, which runs once per push
// with the endpoint, directory and version; the run's rollouts then carry the pushed versions.
// Without a hook the run fails before its first step, naming the key.
func TestWeightHookForServersWithoutUpdate(t *testing.T) {
	testenv.Short(t, "a whole RL run")
	pol := policyDir(t)
	real := serveOn(t, pol)
	target, _ := url.Parse(real)
	proxy := httputil.NewSingleHostReverseProxy(target)
	vllm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/update_weights_from_disk" {
			http.NotFound(w, r)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(vllm.Close)

	o := testOptions(pol, problemsFile(t, 20, 0), filepath.Join(t.TempDir(), "nohook"))
	o.RL.Stages[0].Steps, o.RL.Stages[1].Steps = 1, 1
	o.Rollout.Endpoints, o.ServedModel = []string{vllm.URL}, servedName
	o.Progress = func(rl.Progress) { t.Error("a step ran without a way to give the server its weights") }
	_, err := rl.Run(context.Background(), o)
	skipWithoutSandbox(t, err)
	if err == nil || !strings.Contains(err.Error(), "rollout.weight_hook") {
		t.Fatalf("no hook: %v, want an error naming rollout.weight_hook", err)
	}

	log := filepath.Join(t.TempDir(), "hook.log")
	t.Setenv(hookTargetEnv, real)
	t.Setenv(hookLogEnv, log)
	o.Out, o.Progress = filepath.Join(t.TempDir(), "hook"), nil
	o.Rollout.WeightHook = []string{os.Args[0], "-test.run=^$"}
	res, err := rl.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(log)
	want := fmt.Sprintf("%[1]s 0\n%[1]s 1\n%[1]s 2\n", vllm.URL)
	if res.Steps != 2 || string(b) != want {
		t.Errorf("%d steps; the hook ran for %q, want %q", res.Steps, b, want)
	}
	if v := weightVersion(t, real); v != "2" {
		t.Errorf("the server serves weight version %q after 2 steps, want \"2\"", v)
	}
}
