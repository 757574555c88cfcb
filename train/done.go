package train

import (
	"encoding/json"
	"os"
	"time"

	"gorstar/internal/atomicfile"
)

// A stage's marker, done/<stage>, says it finished and how long it took; a rerun skips a stage
// that has one. It is written last, after every output of the stage, so a kill leaves either a
// finished stage with its marker or an unfinished one without.
type doneMarker struct {
	Stage    string    `json:"stage"`
	Finished time.Time `json:"finished"`
	Seconds  float64   `json:"seconds"`
}

func (p *pipeline) markDone(stage string, seconds float64) error {
	js, err := json.Marshal(doneMarker{Stage: stage, Finished: time.Now().UTC(), Seconds: seconds})
	if err != nil {
		return err
	}
	return atomicfile.WriteBytes(p.lay.Done(stage), append(js, '\n'))
}

func (p *pipeline) done(stage string) bool {
	_, err := os.Stat(p.lay.Done(stage))
	return p.rootSays(err == nil) // under a launcher, rank 0's marker decides (world.go)
}

// doneSeconds is the wall time a finished stage's marker records (0 when unknown).
func (p *pipeline) doneSeconds(stage string) float64 {
	raw, err := os.ReadFile(p.lay.Done(stage))
	if err != nil {
		return 0
	}
	var m doneMarker
	if json.Unmarshal(raw, &m) != nil {
		return 0
	}
	return m.Seconds
}
