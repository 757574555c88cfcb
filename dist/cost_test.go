package dist_test

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"gorstar/dist"
	"gorstar/model"
)

// The cost table of dist/README.md is this function's output: a model's fp32 gradient bytes
// and AllReduceSeconds' many-rank bound at 25, 100 and 400 Gb/s. Qwen3-14B's architecture is its
// published config.json (the model examples/rstar2-14b.toml trains).
func costTable(t *testing.T) string {
	tiny, err := model.Preset("tiny", 0)
	if err != nil {
		t.Fatal(err)
	}
	small, err := model.Preset("small", 0)
	if err != nil {
		t.Fatal(err)
	}
	qwen14 := model.Config{VocabSize: 151936, HiddenSize: 5120, NumHiddenLayers: 40, NumAttentionHeads: 40,
		NumKeyValueHeads: 8, HeadDim: 128, IntermediateSize: 17408, ModelType: "qwen3"}
	rows := []struct {
		name string
		c    model.Config
	}{
		{"`tiny` preset (quickstart)", tiny},
		{"`small` preset", small},
		{"Qwen3-14B (`examples/rstar2-14b.toml`)", qwen14},
	}
	var b strings.Builder
	b.WriteString("| model | parameters P | gradient bytes | 25 Gb/s | 100 Gb/s | 400 Gb/s |\n")
	b.WriteString("| --- | ---: | ---: | ---: | ---: | ---: |\n")
	for _, r := range rows {
		p := r.c.NumParams()
		bytes := 4 * p
		fmt.Fprintf(&b, "| %s | %s | %s |", r.name, sig(float64(p), []string{"", " K", " M", " B"}), sig(float64(bytes), []string{" B", " kB", " MB", " GB"}))
		for _, gbps := range []float64{25, 100, 400} {
			fmt.Fprintf(&b, " %s |", seconds(dist.AllReduceSeconds(bytes, 0, gbps)))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// sig writes v with 3 significant digits (2 from 10 on) and a unit of thousands.
func sig(v float64, units []string) string {
	k := 0
	for v >= 1000 && k+1 < len(units) {
		v /= 1000
		k++
	}
	digits := 2
	if v >= 10 {
		digits = 0
		if v < 100 {
			digits = 1
		}
	}
	return fmt.Sprintf("%.*f%s", digits, v, units[k])
}

// seconds writes s in s or ms with 2 significant digits.
func seconds(s float64) string {
	unit := "s"
	if s < 1 {
		s, unit = s*1000, "ms"
	}
	digits := max(0, 1-int(math.Floor(math.Log10(s))))
	return fmt.Sprintf("%.*f %s", digits, s, unit)
}

func TestCostTableInREADME(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	want := costTable(t)
	if !strings.Contains(string(readme), want) {
		t.Errorf("dist/README.md's cost table is not the computed one:\n%s", want)
	}
}

func TestAllReduceSeconds(t *testing.T) {
	// 1 GB between 2 ranks sends 1 GB per rank: 8 Gbit at 8 Gb/s is one second; many ranks, two.
	if s := dist.AllReduceSeconds(1e9, 2, 8); math.Abs(s-1) > 1e-12 {
		t.Errorf("2 ranks: %g s, want 1", s)
	}
	if s := dist.AllReduceSeconds(1e9, 0, 8); math.Abs(s-2) > 1e-12 {
		t.Errorf("many ranks: %g s, want 2", s)
	}
}
