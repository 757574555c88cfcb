package rollout

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"gorstar/chat"
	"gorstar/data"
	"gorstar/internal/testenv"
	"gorstar/pytool"
)

const imEnd = "<|im_end|>"

// TestStopRules pins what each kind of turn does to a trajectory, with scripted policy tokens and
// the real sandbox where a call is run.
func TestStopRules(t *testing.T) {
	answer := "so it is 4.\n<answer>\\boxed{4}</answer>" + imEnd
	cases := []struct {
		name      string
		turns     []string
		maxTurns  int
		budget    int
		runsTools bool
		finish    FinishReason
		calls     int
		failed    int
		statuses  []string
		toolText  string // of the first turn, when a response was given
		reward    float64
	}{
		{name: "answer", turns: []string{answer}, finish: FinishAnswer, statuses: []string{""}, reward: 1},
		{name: "no call, no answer", turns: []string{"I give up." + imEnd}, finish: FinishNoCall, statuses: []string{""}},
		{name: "call then answer", turns: []string{"let me compute " + call("print(2+2)"), answer}, runsTools: true,
			finish: FinishAnswer, calls: 1, statuses: []string{"ok", ""}, toolText: "4", reward: 1},
		{name: "call closed by the model", turns: []string{call("print(2+2)") + imEnd, answer}, runsTools: true,
			finish: FinishAnswer, calls: 1, statuses: []string{"ok", ""}, toolText: "4", reward: 1},
		{name: "only the first call runs", turns: []string{call("print(1)") + "\n" + call("print(2)"), answer}, runsTools: true,
			finish: FinishAnswer, calls: 1, statuses: []string{"ok", ""}, toolText: "1", reward: 1},
		{name: "code error is a failed call", turns: []string{call("1/0"), answer}, runsTools: true,
			finish: FinishAnswer, calls: 1, failed: 1, statuses: []string{"error", ""}, toolText: "ZeroDivisionError", reward: 1},
		{name: "malformed JSON: the parse error is the response",
			turns:  []string{"<tool_call>\n{\"name\": \"python\", \"arguments\": {\"code\": }\n</tool_call>", answer},
			finish: FinishAnswer, calls: 1, failed: 1, statuses: []string{StatusParseError, ""}, toolText: "not a JSON object", reward: 1},
		{name: "unknown tool: the error names the known ones",
			turns:  []string{"<tool_call>\n{\"name\": \"bash\", \"arguments\": {\"cmd\": \"ls\"}}\n</tool_call>", answer},
			finish: FinishAnswer, calls: 1, failed: 1, statuses: []string{StatusParseError, ""}, toolText: `unknown tool "bash"; the tools are: python`, reward: 1},
		{name: "no code argument", turns: []string{"<tool_call>\n{\"name\": \"python\", \"arguments\": {}}\n</tool_call>", answer},
			finish: FinishAnswer, calls: 1, failed: 1, statuses: []string{StatusParseError, ""}, toolText: `needs a non-empty "code"`, reward: 1},
		{name: "a call in the last turn is not run", turns: []string{call("print(1)")}, maxTurns: 1,
			finish: FinishMaxTurns, statuses: []string{StatusNotRun}},
		{name: "budget spent while generating: truncated, reward 0 despite a right answer",
			turns: []string{"<answer>\\boxed{4}</answer> and some more words" + imEnd}, budget: 20,
			finish: FinishTruncated, statuses: []string{""}},
		{name: "no room for the tool response: truncated", turns: []string{call("print(1)"), answer}, runsTools: true,
			budget: len(call("print(1)")) + 5, finish: FinishTruncated, calls: 1, statuses: []string{"ok"}, toolText: "1"},
	}
	tok := byteTokenizer(t)
	parent := t
	var pool *pytool.Pool
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var tools pytool.Runner
			if c.runsTools {
				testenv.Short(t, "starts sandboxed Python")
				if pool == nil {
					pool = testPool(parent, 2) // skips every case that runs tools where no sandbox works
				}
				tools = pool
			}
			o := DefaultOptions()
			if c.maxTurns > 0 {
				o.MaxTurns = c.maxTurns
			}
			if c.budget > 0 {
				o.MaxResponseTokens = c.budget
			}
			b := &scriptedBackend{tok: tok, turns: c.turns}
			l, err := New(b, tools, tok, o)
			if err != nil {
				t.Fatal(err)
			}
			ts, sum, err := l.Run(ctxT(t), []data.Problem{{ID: "p", Problem: "What is 2+2?", Answer: "4"}})
			if err != nil {
				t.Fatal(err)
			}
			tr := ts[0]
			if tr.Finish != c.finish || tr.ToolCalls != c.calls || tr.FailedToolCalls != c.failed || tr.Reward != c.reward {
				t.Errorf("finish %s, calls %d, failed %d, reward %g; want %s, %d, %d, %g (error %q)",
					tr.Finish, tr.ToolCalls, tr.FailedToolCalls, tr.Reward, c.finish, c.calls, c.failed, c.reward, tr.Error)
			}
			var statuses []string
			for _, r := range tr.Turns {
				statuses = append(statuses, r.Status)
			}
			if !slices.Equal(statuses, c.statuses) {
				t.Errorf("turn statuses %q, want %q", statuses, c.statuses)
			}
			if c.toolText != "" && !strings.Contains(tr.Turns[0].ToolText, c.toolText) {
				t.Errorf("tool text %q, want it to contain %q", tr.Turns[0].ToolText, c.toolText)
			}
			if !b.streams[0].closed {
				t.Error("the stream was not closed")
			}
			if sum.Trajectories != 1 || sum.ToolCalls != c.calls {
				t.Errorf("summary %+v", sum)
			}
			checkTokens(t, l, b.streams[0], tr)
		})
	}
}

// checkTokens checks token in, token out: the response is the generated turns and the appended ids,
// in order, with the mask and logprobs aligned, and the appended ids are the end of an open turn,
// the tool turn and the next prompt, as the renderer makes them.
func checkTokens(t *testing.T, l *Loop, s *scriptedStream, tr Trajectory) {
	t.Helper()
	var want []int32
	var mask []bool
	for i, rec := range tr.Turns {
		gen := l.tok.Encode(s.b.turns[i])[:rec.Tokens]
		want = append(want, gen...)
		for range gen {
			mask = append(mask, true)
		}
		if i >= len(s.appended) {
			break
		}
		var tail []int32
		if !strings.HasSuffix(s.b.turns[i], imEnd) {
			tail = l.render.EndOfTurn()
		}
		more, err := l.render.Continuation([]chat.Message{{Role: chat.RoleTool, Content: rec.ToolText}})
		if err != nil {
			t.Fatal(err)
		}
		tail = append(tail, more...)
		if !slices.Equal(s.appended[i], tail) {
			t.Errorf("turn %d appended %q, want %q", i, l.tok.Decode(s.appended[i]), l.tok.Decode(tail))
		}
		want = append(want, tail...)
		for range tail {
			mask = append(mask, false)
		}
	}
	if !slices.Equal(tr.ResponseIDs, want) || !slices.Equal(tr.LossMask, mask) {
		t.Errorf("response %q\nwant     %q (or the mask differs)", l.tok.Decode(tr.ResponseIDs), l.tok.Decode(want))
	}
	for i, lp := range tr.LogProbs {
		if want := map[bool]float32{true: scriptedLogProb, false: 0}[mask[i]]; lp != want {
			t.Fatalf("logprob %d = %g, want %g", i, lp, want)
		}
	}
	if len(tr.LogProbs) != len(tr.ResponseIDs) || tr.Text != l.tok.Decode(tr.ResponseIDs) || tr.WeightVersion != 7 {
		t.Errorf("%d logprobs for %d ids, weight version %d, text %q", len(tr.LogProbs), len(tr.ResponseIDs), tr.WeightVersion, tr.Text)
	}
}

func TestSampleSeedsDistinct(t *testing.T) {
	seen := map[uint64]bool{}
	for p := 0; p < 50; p++ {
		for s := 0; s < 50; s++ {
			seed := SampleSeed(3, p, s)
			if seen[seed] {
				t.Fatalf("seed of problem %d sample %d repeats", p, s)
			}
			seen[seed] = true
		}
	}
	if first, again := SampleSeed(3, 1, 2), SampleSeed(3, 1, 2); first != again || first == SampleSeed(4, 1, 2) {
		t.Error("seeds are not a function of (base, problem, sample)")
	}
}

// sessionRecorder is the real pool, noting the session of every call and every session closed.
type sessionRecorder struct {
	*pytool.Pool
	mu             sync.Mutex
	called, closed []string
}

func (r *sessionRecorder) Run(ctx context.Context, c pytool.Call) pytool.Result {
	r.mu.Lock()
	r.called = append(r.called, c.Session)
	r.mu.Unlock()
	return r.Pool.Run(ctx, c)
}

func (r *sessionRecorder) CloseSession(name string) {
	r.mu.Lock()
	r.closed = append(r.closed, name)
	r.mu.Unlock()
	r.Pool.CloseSession(name)
}

// With tool sessions a trajectory's later call sees what its earlier one defined, no two
// trajectories share an interpreter, and each session ends with its trajectory; without them
// (rStar2) every call starts afresh.
func TestToolSessions(t *testing.T) {
	tok := byteTokenizer(t)
	pool := testPool(t, 2)
	turns := []string{call("x = 6 * 7\nprint('set')"), call("x += 1\nprint(x)"), "<answer>\\boxed{43}</answer>" + imEnd}
	problems := []data.Problem{{ID: "a", Problem: "?", Answer: "43"}, {ID: "b", Problem: "?", Answer: "43"}}
	for _, sessions := range []bool{true, false} {
		rec := &sessionRecorder{Pool: pool}
		o := DefaultOptions()
		o.Samples, o.ToolSessions = 3, sessions
		l, err := New(&scriptedBackend{tok: tok, turns: turns}, rec, tok, o)
		if err != nil {
			t.Fatal(err)
		}
		ts, _, err := l.Run(ctxT(t), problems)
		if err != nil {
			t.Fatal(err)
		}
		for i, tr := range ts {
			second := tr.Turns[1]
			if sessions && (second.Status != "ok" || second.ToolText != "43") {
				t.Errorf("sessions, trajectory %d: second call %s %q, want ok 43 (each trajectory its own x)", i, second.Status, second.ToolText)
			}
			if !sessions && (second.Status != "error" || !strings.Contains(second.ToolText, "NameError")) {
				t.Errorf("stateless, trajectory %d: second call %s %q, want a NameError", i, second.Status, second.ToolText)
			}
		}
		names := map[string]int{}
		for _, s := range rec.called {
			names[s]++
		}
		slices.Sort(rec.closed)
		switch {
		case !sessions && (len(names) != 1 || names[""] != 12 || len(rec.closed) != 0):
			t.Errorf("stateless: calls by session %v, closed %v", names, rec.closed)
		case sessions && (len(names) != 6 || len(slices.Compact(slices.Clone(rec.closed))) != 6 || len(rec.closed) != 6):
			t.Errorf("sessions: calls by session %v, closed %v: want 6 sessions of 2 calls, each closed once", names, rec.closed)
		case sessions:
			for s, n := range names {
				if s == "" || n != 2 || !slices.Contains(rec.closed, s) {
					t.Errorf("session %q: %d calls, closed %v", s, n, rec.closed)
				}
			}
		}
	}
}
