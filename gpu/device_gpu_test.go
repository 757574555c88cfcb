package gpu

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"gorstar/kernels"
)

// EnvTestDevice names the GPU the device tests run on ("cuda:0", "rocm:0"); unset, they skip.
// bench/gpu-check.sh sets it, and GORSTAR_GPU_CHECK_OUT to a file for one JSON line per op.
const EnvTestDevice = "GORSTAR_GPU_DEVICE"

func openTestDevice(t *testing.T) *Device {
	t.Helper()
	spec := os.Getenv(EnvTestDevice)
	if spec == "" {
		t.Skip("needs a GPU: set " + EnvTestDevice + "=cuda:0 or rocm:0 (bench/gpu-check.sh does)")
	}
	vendor, idx, _ := strings.Cut(spec, ":")
	n, _ := strconv.Atoi(idx)
	d, err := Open(Vendor(vendor), n)
	if err != nil {
		t.Fatal(err)
	}
	for _, note := range d.Notes {
		t.Log(note)
	}
	if err := kernels.Init(0, 0); err != nil {
		t.Fatal(err)
	}
	return d
}

type opCheck struct {
	Op     string  `json:"op"`
	Device string  `json:"device"`
	MaxRel float64 `json:"max_rel_err"`
	Bound  float64 `json:"bound"`
	OK     bool    `json:"ok"`
}

// pairs holds an op's inputs in CPU (kernels) and device buffers with the same values.
type pairs struct {
	t *testing.T
	d *Device
	r *rand.Rand
}

func (p pairs) f32(n int, scale float32) (kernels.Buf, Buf) {
	v := make([]float32, n)
	for i := range v {
		v[i] = (p.r.Float32()*2 - 1) * scale
	}
	c, g := kernels.Alloc(n), p.d.Alloc(n, kernels.F32)
	c.CopyFrom(v)
	p.d.CopyFrom(g, v)
	return c, g
}

func (p pairs) i32(v []int32) (kernels.Buf, Buf) {
	c, g := kernels.AllocI32(len(v)), p.d.Alloc(len(v), kernels.I32)
	c.CopyFromI32(v)
	p.d.CopyFromI32(g, v)
	return c, g
}

func (p pairs) bf16(n int, scale float32) (kernels.Buf, Buf) {
	v := make([]float32, n)
	for i := range v {
		v[i] = (p.r.Float32()*2 - 1) * scale
	}
	c := kernels.Alloc(n)
	defer c.Free()
	c.CopyFrom(v)
	cb, gb := kernels.AllocBF16(n), p.d.Alloc(n, kernels.BF16)
	kernels.ToBF16(cb, c, n)
	bits := make([]uint16, n)
	cb.CopyToBF16(bits)
	p.d.CopyFromBF16(gb, bits)
	return cb, gb
}

func (p pairs) zeros(n int) (kernels.Buf, Buf) {
	c, g := kernels.Alloc(n), p.d.Alloc(n, kernels.F32)
	c.Zero()
	p.d.Zero(g)
	return c, g
}

// check compares a device result with the CPU's, relative to the CPU result's largest magnitude.
func (p pairs) check(op string, c kernels.Buf, g Buf, n int, bound float64) {
	p.t.Helper()
	want, got := make([]float32, n), make([]float32, n)
	if c.DType() == kernels.BF16 {
		wb, gb := make([]uint16, n), make([]uint16, n)
		c.CopyToBF16(wb)
		p.d.CopyToBF16(gb, g)
		for i := range wb {
			want[i], got[i] = math.Float32frombits(uint32(wb[i])<<16), math.Float32frombits(uint32(gb[i])<<16)
		}
	} else {
		c.CopyTo(want)
		p.d.CopyTo(got, g)
	}
	if err := p.d.Synchronize(); err != nil {
		p.t.Fatalf("%s: %v", op, err)
	}
	var scale, diff float64
	for i := range want {
		scale = max(scale, math.Abs(float64(want[i])))
		diff = max(diff, math.Abs(float64(want[i])-float64(got[i])))
		if math.IsNaN(float64(got[i])) != math.IsNaN(float64(want[i])) {
			diff = math.Inf(1)
		}
	}
	rel := diff / max(scale, 1e-30)
	p.record(opCheck{Op: op, Device: p.d.Name(), MaxRel: rel, Bound: bound, OK: rel <= bound})
}

func (p pairs) scalar(op string, want, got, bound float64) {
	rel := math.Abs(want-got) / max(math.Abs(want), 1e-30)
	p.record(opCheck{Op: op, Device: p.d.Name(), MaxRel: rel, Bound: bound, OK: rel <= bound})
}

func (p pairs) record(c opCheck) {
	if !c.OK {
		p.t.Errorf("%s on %s: max relative error %.3g > %.3g", c.Op, c.Device, c.MaxRel, c.Bound)
	}
	if out := os.Getenv("GORSTAR_GPU_CHECK_OUT"); out != "" {
		f, err := os.OpenFile(out, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			b, _ := json.Marshal(c)
			fmt.Fprintf(f, "%s\n", b)
			f.Close()
		}
	}
}

// opSizes are the shapes compareOps uses: Qwen3-0.6B's on a GPU, small ones in the emulator.
type opSizes struct {
	gemm              []struct{ M, N, K int }
	T, C, V           int
	nh, nkv, hd, B, L int
	docs              []int // document lengths of the first row (sum L)
	capacity          int
	lens              []int32
	Vx, adamN         int
}

var gpuSizes = opSizes{
	gemm: []struct{ M, N, K int }{{64, 1024, 1024}, {1, 1024, 3072}, {2048, 1024, 1024}, {8, 151936, 1024}},
	T:    256, C: 1024, V: 4096, nh: 16, nkv: 8, hd: 128, B: 2, L: 256, docs: []int{100, 56, 100},
	capacity: 64, lens: []int32{5, 64, 17}, Vx: 151936, adamN: 1<<20 + 123,
}

// Every op on the GPU against the CPU backend on the same inputs: fp32 ops within 1e-4 of the
// largest value (the GPU's expf and summation order differ), bf16 results within 8e-3 (one
// bf16 rounding step).
func TestDeviceMatchesCPU(t *testing.T) {
	t0 := time.Now()
	d := openTestDevice(t)
	opened := time.Since(t0)
	compareOps(t, d, gpuSizes)
	// What bench/gpu-check.sh reports beside the ops: the device, how long Open took (the kernels'
	// compile, or the cache), the notes and the GEMM chosen per shape.
	if out := os.Getenv("GORSTAR_GPU_CHECK_INFO"); out != "" {
		b, _ := json.Marshal(map[string]any{"backend": d.Name(), "device": d.Info, "open_s": opened.Seconds(),
			"kernel_from_cache": d.Kernel.FromCache, "kernel_bytes": len(d.Kernel.Code), "notes": d.Notes,
			"gemm": d.GEMMChoices()})
		if err := os.WriteFile(out, b, 0o644); err != nil {
			t.Error(err)
		}
	}
}

func compareOps(t *testing.T, d *Device, z opSizes) {
	p := pairs{t, d, rand.New(rand.NewPCG(1, 2))}
	const fp32 = 1e-4
	for _, s := range z.gemm {
		for _, tr := range [][2]bool{{false, true}, {false, false}, {true, false}} {
			lda, ldb := s.K, s.N
			if tr[0] {
				lda = s.M
			}
			if tr[1] {
				ldb = s.K
			}
			ac, ag := p.f32(s.M*s.K, 1)
			bc, bg := p.f32(s.K*s.N, 1)
			cc, cg := p.f32(s.M*s.N, 1)
			kernels.SGEMM(tr[0], tr[1], s.M, s.N, s.K, 0.5, ac, lda, bc, ldb, 0.25, cc, s.N)
			d.GEMM(tr[0], tr[1], s.M, s.N, s.K, 0.5, ag, lda, bg, ldb, 0.25, cg, s.N)
			p.check(fmt.Sprintf("sgemm %dx%dx%d %v", s.M, s.N, s.K, tr), cc, cg, s.M*s.N, fp32)
			ahc, ahg := p.bf16(s.M*s.K, 1)
			bhc, bhg := p.bf16(s.K*s.N, 1)
			chc, chg := p.zeros(s.M * s.N)
			kernels.GEMMBF16(tr[0], tr[1], s.M, s.N, s.K, 1, ahc, lda, bhc, ldb, 0, chc, s.N)
			d.GEMM(tr[0], tr[1], s.M, s.N, s.K, 1, ahg, lda, bhg, ldb, 0, chg, s.N)
			p.check(fmt.Sprintf("gemm bf16 %dx%dx%d %v", s.M, s.N, s.K, tr), chc, chg, s.M*s.N, fp32)
		}
	}
	for k, v := range d.GEMMChoices() {
		t.Logf("GEMM %s: %s", k, v)
	}
	T, C, V := z.T, z.C, z.V
	xc, xg := p.f32(T*C, 2)
	wc, wg := p.f32(C, 1)
	yc, yg := p.zeros(T * C)
	rc, rg := p.zeros(T)
	kernels.RMSNormForward(yc, rc, xc, wc, T, C, 1e-6)
	d.RMSNormForward(yg, rg, xg, wg, T, C, 1e-6)
	p.check("rmsnorm forward", yc, yg, T*C, fp32)
	dyc, dyg := p.f32(T*C, 1)
	dxc, dxg := p.zeros(T * C)
	dwc, dwg := p.zeros(C)
	kernels.RMSNormBackward(dxc, dwc, dyc, xc, wc, rc, T, C)
	d.RMSNormBackward(dxg, dwg, dyg, xg, wg, rg, T, C)
	p.check("rmsnorm backward dx", dxc, dxg, T*C, fp32)
	p.check("rmsnorm backward dw", dwc, dwg, C, fp32)

	nh, nkv, hd, B, L := z.nh, z.nkv, z.hd, z.B, z.L
	pos := make([]int32, B*L)
	for i := range pos {
		pos[i] = int32(i % L)
	}
	pc, pg := p.i32(pos)
	qc, qg := p.f32(B*L*nh*hd, 1)
	kernels.RoPEForward(qc, pc, B*L, nh, hd, 1e6)
	d.RoPEForward(qg, pg, B*L, nh, hd, 1e6)
	p.check("rope forward", qc, qg, B*L*nh*hd, fp32)
	kernels.RoPEBackward(qc, pc, B*L, nh, hd, 1e6)
	d.RoPEBackward(qg, pg, B*L, nh, hd, 1e6)
	p.check("rope backward", qc, qg, B*L*nh*hd, fp32)

	kc, kg := p.f32(B*L*nkv*hd, 1)
	vc, vg := p.f32(B*L*nkv*hd, 1)
	starts := make([]int32, B*L)
	kernels.DocStarts(starts[:L], z.docs)
	kernels.DocStarts(starts[L:], []int{L})
	for _, docs := range []bool{false, true} {
		var dsc kernels.Buf
		var dsg Buf
		name := "attention"
		if docs {
			dsc, dsg = p.i32(starts)
			name = "attention docs"
		}
		oc, og := p.zeros(B * L * nh * hd)
		lc, lg := p.zeros(B * nh * L)
		kernels.AttentionForwardDocs(oc, lc, qc, kc, vc, dsc, B, L, L, nh, nkv, hd, 0.088)
		d.AttentionForward(og, lg, qg, kg, vg, dsg, B, L, L, nh, nkv, hd, 0.088)
		p.check(name+" forward", oc, og, B*L*nh*hd, fp32)
		p.check(name+" lse", lc, lg, B*nh*L, fp32)
		doc, dog := p.f32(B*L*nh*hd, 1)
		dqc, dqg := p.zeros(B * L * nh * hd)
		dkc, dkg := p.zeros(B * L * nkv * hd)
		dvc, dvg := p.zeros(B * L * nkv * hd)
		kernels.AttentionBackwardDocs(dqc, dkc, dvc, doc, qc, kc, vc, oc, lc, dsc, B, L, L, nh, nkv, hd, 0.088)
		d.AttentionBackward(dqg, dkg, dvg, dog, qg, kg, vg, og, lg, dsg, B, L, L, nh, nkv, hd, 0.088)
		p.check(name+" backward dq", dqc, dqg, B*L*nh*hd, fp32)
		p.check(name+" backward dk", dkc, dkg, B*L*nkv*hd, fp32)
		p.check(name+" backward dv", dvc, dvg, B*L*nkv*hd, fp32)
	}
	{
		nseq, capacity, lens := len(z.lens), z.capacity, z.lens
		var kcs, vcs []kernels.Buf
		var kgs, vgs []Buf
		for range nseq {
			a, b := p.f32(capacity*nkv*hd, 1)
			c2, d2 := p.f32(capacity*nkv*hd, 1)
			kcs, kgs, vcs, vgs = append(kcs, a), append(kgs, b), append(vcs, c2), append(vgs, d2)
		}
		qdc, qdg := p.f32(nseq*nh*hd, 1)
		knc, kng := p.f32(nseq*nkv*hd, 1)
		vnc, vng := p.f32(nseq*nkv*hd, 1)
		oc, og := p.zeros(nseq * nh * hd)
		kernels.AttentionDecode(oc, qdc, knc, vnc, kcs, vcs, nil, lens, nil, nh, nkv, hd, 0.088)
		d.AttentionDecode(og, qdg, kng, vng, kgs, vgs, lens, nh, nkv, hd, 0.088)
		p.check("attention decode", oc, og, nseq*nh*hd, fp32)
		p.check("attention decode append", kcs[1], kgs[1], capacity*nkv*hd, 0)
	}

	gc, gg := p.f32(T*C, 3)
	uc, ug := p.f32(T*C, 1)
	sc, sg := p.zeros(T * C)
	kernels.SwiGLUForward(sc, gc, uc, T*C)
	d.SwiGLUForward(sg, gg, ug, T*C)
	p.check("swiglu forward", sc, sg, T*C, fp32)
	dgc, dgg := p.zeros(T * C)
	duc, dug := p.zeros(T * C)
	kernels.SwiGLUBackward(dgc, duc, dyc, gc, uc, T*C)
	d.SwiGLUBackward(dgg, dug, dyg, gg, ug, T*C)
	p.check("swiglu backward dgate", dgc, dgg, T*C, fp32)
	p.check("swiglu backward dup", duc, dug, T*C, fp32)
	kernels.Add(sc, gc, T*C)
	d.Add(sg, gg, T*C)
	kernels.Scale(sc, 0.3, T*C)
	d.Scale(sg, 0.3, T*C)
	p.check("add, scale", sc, sg, T*C, fp32)

	ids := make([]int32, T)
	for i := range ids {
		ids[i] = int32(p.r.IntN(V))
	}
	ids[T-1] = ids[0] // a repeated id: its gradient rows add
	ic, ig := p.i32(ids)
	tc, tg := p.f32(V*C, 1)
	ec, eg := p.zeros(T * C)
	kernels.EmbeddingForward(ec, ic, tc, T, C)
	d.EmbeddingForward(eg, ig, tg, T, C)
	p.check("embedding forward", ec, eg, T*C, 0)
	dtc, dtg := p.zeros(V * C)
	kernels.EmbeddingBackward(dtc, dyc, ic, T, C)
	d.EmbeddingBackward(dtg, dyg, ig, T, C)
	p.check("embedding backward", dtc, dtg, V*C, fp32)
	htc, htg := kernels.AllocBF16(V*C), d.Alloc(V*C, kernels.BF16)
	kernels.ToBF16(htc, tc, V*C)
	d.ToBF16(htg, tg, V*C)
	kernels.EmbeddingForward(ec, ic, htc, T, C)
	d.EmbeddingForward(eg, ig, htg, T, C)
	p.check("embedding forward, bf16 table", ec, eg, T*C, 0)

	hc, hg := kernels.AllocBF16(T*C), d.Alloc(T*C, kernels.BF16)
	kernels.ToBF16(hc, xc, T*C)
	d.ToBF16(hg, xg, T*C)
	p.check("bf16 from f32", hc, hg, T*C, 0)
	back, backg := p.zeros(T * C)
	kernels.FromBF16(back, hc, T*C)
	d.FromBF16(backg, hg, T*C)
	p.check("bf16 to f32", back, backg, T*C, 0)

	Vx := z.Vx
	lgc, lgg := p.f32(8*Vx, 8)
	tgt := []int32{1, 5, -1, int32(Vx - 1), 7, 0, 100, 99}
	tgc, tgg := p.i32(tgt)
	wtc, wtg := p.f32(8, 1)
	lpc, lpg := p.zeros(8)
	dlc, dlg := p.zeros(8 * Vx)
	lossC := kernels.SoftmaxXent(lpc, dlc, lgc, tgc, wtc, 8, Vx)
	lossG := d.SoftmaxXent(lpg, dlg, lgg, tgg, wtg, 8, Vx)
	p.scalar("softmax xent loss", lossC, lossG, fp32)
	p.check("softmax xent logprob", lpc, lpg, 8, fp32)
	p.check("softmax xent dlogits", dlc, dlg, 8*Vx, fp32)

	n := z.adamN
	prc, prg := p.f32(n, 1)
	grc, grg := p.f32(n, 1)
	mc, mg := p.zeros(n)
	vvc, vvg := p.zeros(n)
	p.scalar("sum of squares", kernels.SumSquares(grc, n), d.SumSquares(grg, n), 1e-9)
	for step := 1; step <= 3; step++ {
		kernels.AdamW(prc, grc, mc, vvc, n, 1e-3, 0.9, 0.95, 1e-8, 0.1, 0.7, step)
		d.AdamW(prg, grg, mg, vvg, n, 1e-3, 0.9, 0.95, 1e-8, 0.1, 0.7, step)
	}
	p.check("adamw", prc, prg, n, 1e-6)
}
