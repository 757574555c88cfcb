package sft

import (
	"fmt"
	"os"
	"testing"

	"gorstar/config"
	"gorstar/dist"
	"gorstar/model"
)

func TestZZSplitBalance(t *testing.T) {
	dir := os.Getenv("ZZ_DIR")
	if dir == "" {
		t.Skip()
	}
	c := config.Default().SFT
	tr := &trainer{o: Options{Model: dir + "/init", Data: dir + "/sft.parquet", Config: c}}
	if err := tr.loadData(); err != nil {
		t.Fatal(err)
	}
	mc, _ := model.Preset("small", 0)
	tr.m = &model.Model{Config: mc}
	for _, batch := range []int{8, 16} {
		plan := makePlan(tr.ds.Examples, 1, batch, 0, 1)
		for _, mode := range []string{"position", "balanced", "one"} {
			var sumMax, sumMean, realMax, realMean float64
			for _, st := range plan {
				n := 2
				if mode == "one" {
					n = 1
				}
				var pads, reals []float64
				for r := range n {
					w := &dist.World{Place: dist.Place{Rank: r, Size: n}}
					tr.o.World = w
					var mine []int
					if mode == "position" {
						mine = w.Shard(st.Examples)
					} else {
						mine = tr.shard(tr.ds.Examples, st.Examples)
					}
					pad, real := 0, 0
					for _, mb := range microBatches(tr.ds.Examples, rowsOf(tr.ds.Examples, mine, c.MaxSeqLen), c.MicroBatchTokens) {
						b, rl := buildBatch(tr.ds.Examples, mb, 1)
						pad += b.B * b.L
						real += rl
					}
					pads = append(pads, float64(pad))
					reals = append(reals, float64(real))
				}
				mx, mean := 0.0, 0.0
				for _, p := range pads {
					mx = max(mx, p)
					mean += p / float64(len(pads))
				}
				sumMax += mx
				sumMean += mean
				mx, mean = 0, 0
				for _, p := range reals {
					mx = max(mx, p)
					mean += p / float64(len(pads))
				}
				realMax += mx
				realMean += mean
				if batch == 16 {
					fmt.Printf("  %s step pads %v real %v\n", mode, pads, reals)
				}
			}
			fmt.Printf("batch %d %s: %d steps, padded tokens max/mean %.3f, real max/mean %.3f, real/padded (mean) %.3f\n", batch, mode, len(plan), sumMax/sumMean, realMax/realMean, realMean/sumMean)
		}
	}
}
