package serve

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"

	"gorstar/internal/plainjson"
	"gorstar/model"
	"gorstar/openai"
	"gorstar/safetensors"
)

// weightState is the version of the weights being served: how many updates were loaded and the
// label responses report ("0" at start, then the update count unless the update named one).
type weightState struct {
	mu      sync.Mutex // serializes updates, so versions follow the order the weights were loaded in
	read    sync.Mutex // guards updates and version for readers during an update
	updates int64
	version string
}

func (w *weightState) current() (int64, string) {
	w.read.Lock()
	defer w.read.Unlock()
	if w.version == "" {
		return w.updates, "0"
	}
	return w.updates, w.version
}

func (w *weightState) bump(label string) string {
	w.read.Lock()
	defer w.read.Unlock()
	w.updates++
	w.version = label
	if label == "" {
		w.version = strconv.FormatInt(w.updates, 10)
	}
	return w.version
}

// updateWeightsFromDisk answers POST /update_weights_from_disk as SGLang does: the safetensors of
// model_path replace the served model's weights between two engine steps; 200 {"success": true,
// "message", "weight_version"} or 400 {"success": false, "message"}. Sequences in flight go on
// with the new weights (their caches hold keys and values of the old): update between rollout
// batches for on-policy samples.
func (s *Server) updateWeightsFromDisk(w http.ResponseWriter, r *http.Request) error {
	fail := func(format string, args ...any) error {
		plainjson.WriteHTTP(w, http.StatusBadRequest, openai.UpdateWeightsResponse{Message: fmt.Sprintf(format, args...)})
		return nil
	}
	body, err := s.readBody(w, r)
	if err != nil {
		return fail("%v", err)
	}
	var req openai.UpdateWeightsRequest
	if err := decodeBody(body, &req); err != nil {
		return fail("%v", err)
	}
	if req.ModelPath == "" {
		return fail("model_path is required: the directory holding the new model.safetensors")
	}
	if req.LoadFormat != "" && req.LoadFormat != "auto" && req.LoadFormat != "safetensors" {
		return fail("load_format %q: gorstar serve loads safetensors only", req.LoadFormat)
	}
	s.weights.mu.Lock()
	defer s.weights.mu.Unlock()
	n, err := s.loadWeights(r.Context(), req.ModelPath)
	if err != nil {
		return fail("%v", err)
	}
	version := s.weights.bump(req.WeightVersion)
	paused := 0
	plainjson.WriteHTTP(w, http.StatusOK, openai.UpdateWeightsResponse{Success: true, WeightVersion: versionJSON(version), NumPausedRequests: &paused,
		Message: fmt.Sprintf("loaded %d tensors from %s; weight version %s", n, req.ModelPath, version)})
	return nil
}

// loadWeights copies the tensors of dir into the engine's model between two steps. Every name and
// shape is checked before the first write, so a directory of another architecture changes nothing.
func (s *Server) loadWeights(ctx context.Context, dir string) (int, error) {
	set, err := safetensors.OpenDir(dir)
	if err != nil {
		return 0, err
	}
	defer set.Close()
	n := 0
	err = s.eng.WithModel(ctx, func(m *model.Model) error {
		for _, t := range m.Params.Tensors {
			if !set.Has(t.Name) {
				return fmt.Errorf("%s: tensor %s is missing (want shape %v)", dir, t.Name, t.Shape)
			}
			info, err := set.Info(t.Name)
			if err != nil {
				return err
			}
			if !slices.Equal(info.Shape, t.Shape) {
				return fmt.Errorf("%s: tensor %s has shape %v, the served model's is %v", dir, t.Name, info.Shape, t.Shape)
			}
		}
		var host []float32
		for _, t := range m.Params.Tensors {
			host = slices.Grow(host[:0], t.Size)[:t.Size]
			if err := set.ReadFloat32(t.Name, host); err != nil {
				return fmt.Errorf("%w (the weights are now partly replaced: load a good directory before serving more)", err)
			}
			t.Buf.CopyFrom(host)
			n++
		}
		return nil
	})
	return n, err
}
