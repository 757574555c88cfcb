package kernels

// Independent float64 references for the kernels, written from the math, and the helpers the tests
// share: random data, buffers from slices, finite differences and comparisons.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	if err := Init(0, 2); err != nil {
		// Only a GPU backend without a GPU gets here (the CPU backend always initializes).
		fmt.Printf("skipping the kernels tests on %s: %v\n", Backend(), err)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func randn(r *rand.Rand, n int, scale float64) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = r.NormFloat64() * scale
	}
	return x
}

// buf allocates a float32 buffer holding x; the test frees it at cleanup.
func buf(t testing.TB, x []float64) Buf {
	b := Alloc(len(x))
	f := make([]float32, len(x))
	for i, v := range x {
		f[i] = float32(v)
	}
	b.CopyFrom(f)
	t.Cleanup(b.Free)
	return b
}

func bufI32(t testing.TB, x []int32) Buf {
	b := AllocI32(len(x))
	b.CopyFromI32(x)
	t.Cleanup(b.Free)
	return b
}

func zeros(t testing.TB, n int) Buf {
	b := Alloc(n)
	b.Zero()
	t.Cleanup(b.Free)
	return b
}

func read(b Buf) []float64 {
	f := make([]float32, b.Len())
	b.CopyTo(f)
	x := make([]float64, len(f))
	for i, v := range f {
		x[i] = float64(v)
	}
	return x
}

// rounded returns x rounded to float32 and back, so references start from the same inputs.
func rounded(x []float64) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = float64(float32(v))
	}
	return y
}

// closeTo fails when |got-want| > atol + rtol*|want| anywhere.
func closeTo(t *testing.T, what string, got, want []float64, atol, rtol float64) {
	t.Helper()
	if len(got) < len(want) {
		t.Fatalf("%s: got %d values, want %d", what, len(got), len(want))
	}
	bad := 0
	for i := range want {
		if d := math.Abs(got[i] - want[i]); !(d <= atol+rtol*math.Abs(want[i])) {
			if bad < 5 {
				t.Errorf("%s[%d] = %.8g, want %.8g (diff %.3g)", what, i, got[i], want[i], d)
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d of %d values off", what, bad, len(want))
	}
}

// numericGrad is the central finite-difference gradient of f at x (float64 throughout).
func numericGrad(f func([]float64) float64, x []float64) []float64 {
	g := make([]float64, len(x))
	for i := range x {
		h := 1e-6 * math.Max(1, math.Abs(x[i]))
		old := x[i]
		x[i] = old + h
		fp := f(x)
		x[i] = old - h
		fm := f(x)
		x[i] = old
		g[i] = (fp - fm) / (2 * h)
	}
	return g
}

func dotAll(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func refLinear(x, w, b []float64, T, in, out int) []float64 {
	y := make([]float64, T*out)
	for t := 0; t < T; t++ {
		for o := 0; o < out; o++ {
			s := 0.0
			if b != nil {
				s = b[o]
			}
			for i := 0; i < in; i++ {
				s += x[t*in+i] * w[o*in+i]
			}
			y[t*out+o] = s
		}
	}
	return y
}

func refRMSNorm(x, w []float64, T, C int, eps float64) []float64 {
	y := make([]float64, T*C)
	for t := 0; t < T; t++ {
		ss := 0.0
		for c := 0; c < C; c++ {
			ss += x[t*C+c] * x[t*C+c]
		}
		r := 1 / math.Sqrt(ss/float64(C)+eps)
		for c := 0; c < C; c++ {
			y[t*C+c] = w[c] * x[t*C+c] * r
		}
	}
	return y
}

// refRoPE follows transformers' apply_rotary_pos_emb: q*cos + rotate_half(q)*sin with
// rotate_half(x) = cat(-x2, x1) and cos/sin repeated over both halves.
func refRoPE(x []float64, pos []int32, T, heads, hd int, theta float64) []float64 {
	y := make([]float64, len(x))
	half := hd / 2
	for t := 0; t < T; t++ {
		for h := 0; h < heads; h++ {
			v := x[(t*heads+h)*hd : (t*heads+h+1)*hd]
			o := y[(t*heads+h)*hd : (t*heads+h+1)*hd]
			for d := 0; d < hd; d++ {
				i := d % half
				a := float64(pos[t]) * math.Pow(theta, -float64(2*i)/float64(hd))
				var rot float64
				if d < half {
					rot = -v[d+half]
				} else {
					rot = v[d-half]
				}
				o[d] = v[d]*math.Cos(a) + rot*math.Sin(a)
			}
		}
	}
	return y
}

// refFirstKey is the first key the query at key position p of row b sees: its document's start
// (starts [B,Lk]), or 0 without documents.
func refFirstKey(starts []int32, b, Lk, p int) int {
	if starts == nil {
		return 0
	}
	return int(starts[b*Lk+p])
}

// refAttention materializes every score row: out and lse for causal GQA with Lq ≤ Lk, the query at
// key position p seeing keys refFirstKey(p)..p.
func refAttention(q, k, v []float64, starts []int32, B, Lq, Lk, nh, nkv, hd int, scale float64) (out, lse []float64) {
	out = make([]float64, B*Lq*nh*hd)
	lse = make([]float64, B*nh*Lq)
	group := nh / nkv
	for b := 0; b < B; b++ {
		for h := 0; h < nh; h++ {
			g := h / group
			for i := 0; i < Lq; i++ {
				last := Lk - Lq + i
				first := refFirstKey(starts, b, Lk, last)
				s := make([]float64, last+1-first) // s[j-first] for keys first..last
				mx := math.Inf(-1)
				for j := first; j <= last; j++ {
					for d := 0; d < hd; d++ {
						s[j-first] += q[((b*Lq+i)*nh+h)*hd+d] * k[((b*Lk+j)*nkv+g)*hd+d]
					}
					s[j-first] *= scale
					mx = math.Max(mx, s[j-first])
				}
				z := 0.0
				for j := range s {
					z += math.Exp(s[j] - mx)
				}
				for j := range s {
					p := math.Exp(s[j]-mx) / z
					for d := 0; d < hd; d++ {
						out[((b*Lq+i)*nh+h)*hd+d] += p * v[((b*Lk+first+j)*nkv+g)*hd+d]
					}
				}
				lse[(b*nh+h)*Lq+i] = mx + math.Log(z)
			}
		}
	}
	return out, lse
}

func silu(g float64) float64 { return g / (1 + math.Exp(-g)) }

func refSwiGLU(gate, up []float64) []float64 {
	y := make([]float64, len(gate))
	for i := range y {
		y[i] = silu(gate[i]) * up[i]
	}
	return y
}

// refXent returns the weighted loss and per-token log-probabilities.
func refXent(logits []float64, target []int32, weight []float64, T, V int) (float64, []float64) {
	loss := 0.0
	lp := make([]float64, T)
	for t := 0; t < T; t++ {
		if target[t] < 0 {
			continue
		}
		row := logits[t*V : (t+1)*V]
		mx := math.Inf(-1)
		for _, x := range row {
			mx = math.Max(mx, x)
		}
		z := 0.0
		for _, x := range row {
			z += math.Exp(x - mx)
		}
		lp[t] = row[target[t]] - mx - math.Log(z)
		w := 1.0
		if weight != nil {
			w = weight[t]
		}
		loss -= w * lp[t]
	}
	return loss, lp
}

// refAttentionBackward is the analytic gradient of sum(dout * attention(q, k, v)) in float64.
func refAttentionBackward(dout, q, k, v []float64, starts []int32, B, Lq, Lk, nh, nkv, hd int, scale float64) (dq, dk, dv []float64) {
	dq, dk, dv = make([]float64, len(q)), make([]float64, len(k)), make([]float64, len(v))
	group := nh / nkv
	for b := 0; b < B; b++ {
		for h := 0; h < nh; h++ {
			g := h / group
			for i := 0; i < Lq; i++ {
				qo := ((b*Lq+i)*nh + h) * hd
				last := Lk - Lq + i
				first := refFirstKey(starts, b, Lk, last)
				p := make([]float64, last+1-first) // p[j] for key first+j
				mx := math.Inf(-1)
				for j := range p {
					ko := ((b*Lk+first+j)*nkv + g) * hd
					for d := 0; d < hd; d++ {
						p[j] += q[qo+d] * k[ko+d] * scale
					}
					mx = math.Max(mx, p[j])
				}
				z := 0.0
				for j := range p {
					p[j] = math.Exp(p[j] - mx)
					z += p[j]
				}
				dp := make([]float64, len(p))
				sum := 0.0 // sum_j p_j dp_j
				for j := range p {
					p[j] /= z
					ko := ((b*Lk+first+j)*nkv + g) * hd
					for d := 0; d < hd; d++ {
						dp[j] += dout[qo+d] * v[ko+d]
						dv[ko+d] += p[j] * dout[qo+d]
					}
					sum += p[j] * dp[j]
				}
				for j := range p {
					ds := p[j] * (dp[j] - sum) * scale
					ko := ((b*Lk+first+j)*nkv + g) * hd
					for d := 0; d < hd; d++ {
						dq[qo+d] += ds * k[ko+d]
						dk[ko+d] += ds * q[qo+d]
					}
				}
			}
		}
	}
	return dq, dk, dv
}
