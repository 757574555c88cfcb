package openai

import (
	"encoding/json"
	"testing"
)

// The weight-update messages are SGLang's: a refusal carries success and message only, a success
// also the version and num_paused_requests (0 included), and the request omits what is not given.
func TestUpdateWeightsWire(t *testing.T) {
	zero := 0
	for _, c := range []struct {
		v    any
		want string
	}{
		{UpdateWeightsResponse{Message: "no"}, `{"message":"no","success":false}`},
		{UpdateWeightsResponse{Message: "ok", Success: true, NumPausedRequests: &zero, WeightVersion: json.RawMessage(`"3"`)},
			`{"message":"ok","num_paused_requests":0,"success":true,"weight_version":"3"}`},
		{UpdateWeightsRequest{ModelPath: "/m"}, `{"model_path":"/m"}`},
		{UpdateWeightsRequest{ModelPath: "/m", WeightVersion: "step-1"}, `{"model_path":"/m","weight_version":"step-1"}`},
		{WeightVersionResponse{WeightVersion: json.RawMessage(`"1"`)}, `{"weight_version":"1"}`},
	} {
		got, err := json.Marshal(c.v)
		if err != nil || string(got) != c.want {
			t.Errorf("%+v: %s, %v; want %s", c.v, got, err, c.want)
		}
	}
}
