package rollout

import "testing"

func TestWellFormed(t *testing.T) {
	ok := TurnRecord{Status: "ok"}
	parse := TurnRecord{Status: StatusParseError}
	cases := []struct {
		name string
		t    Trajectory
		want bool
	}{
		{"boxed answer after a call", Trajectory{Finish: FinishAnswer, Extracted: "42", Turns: []TurnRecord{ok, {}}}, true},
		{"answer without a box", Trajectory{Finish: FinishAnswer, Turns: []TurnRecord{{}}}, false},
		{"a call that did not parse", Trajectory{Finish: FinishAnswer, Extracted: "42", Turns: []TurnRecord{parse, {}}}, false},
		{"no call, no answer", Trajectory{Finish: FinishNoCall, Turns: []TurnRecord{{}}}, false},
		{"truncated", Trajectory{Finish: FinishTruncated, Turns: []TurnRecord{ok}}, false},
		{"turn limit while calling", Trajectory{Finish: FinishMaxTurns, Turns: []TurnRecord{ok, {Status: StatusNotRun}}}, true},
		{"error", Trajectory{Finish: FinishError}, false},
	}
	var all []Trajectory
	want := 0
	for _, c := range cases {
		if got := c.t.WellFormed(); got != c.want {
			t.Errorf("%s: WellFormed = %v, want %v", c.name, got, c.want)
		}
		if c.want {
			want++
		}
		all = append(all, c.t)
	}
	if s := Summarize(all, 0); s.WellFormed != want {
		t.Errorf("Summary.WellFormed = %d, want %d", s.WellFormed, want)
	}
}
