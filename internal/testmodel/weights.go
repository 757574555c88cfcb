package testmodel

import (
	"math"
	"testing"

	"gorstar/model"
)

// Weights reads every parameter of the model directory dir.
func Weights(t testing.TB, dir string) []float32 {
	t.Helper()
	m, err := model.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	w := make([]float32, m.Params.Size)
	m.Params.All.CopyTo(w)
	return w
}

// UpdateDistance is |a − b| / |a − init| over all parameters: how far two runs ended apart,
// relative to how far training moved the weights from init.
func UpdateDistance(a, b, init []float32) float64 {
	var diff, moved float64
	for i := range a {
		diff += float64(a[i]-b[i]) * float64(a[i]-b[i])
		moved += float64(a[i]-init[i]) * float64(a[i]-init[i])
	}
	return math.Sqrt(diff / moved)
}
