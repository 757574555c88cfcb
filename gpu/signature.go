package gpu

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// Kernel parameters as the launch packs them: 'p' an address (8 bytes), 'i' an int, 'f' a float,
// 's' a gk_size (8 bytes).
var (
	sigOnce    sync.Once
	signatures map[string]string
)

var (
	kernelRE = regexp.MustCompile(`(?s)GK_KERNEL (?:__launch_bounds__\(\w+\) )?void (\w+)\(([^)]*)\)`)
	gemmRE   = regexp.MustCompile(`(?m)^GK_GEMM\((\w+),`)
)

// kernelSignatures reads every kernel's parameter kinds from the embedded source, so a launch
// whose arguments do not match the kernel (count, or a pointer where an int is expected) panics
// instead of passing garbage to the GPU.
func kernelSignatures() map[string]string {
	sigOnce.Do(func() {
		program, _ := KernelSource()
		program = strings.ReplaceAll(program, "ATTN_ARGS",
			"int B, int Lq, int Lk, int nh, int nkv, int hd, float scale, const gk_i32 *doc_start")
		signatures = map[string]string{}
		for _, m := range kernelRE.FindAllStringSubmatch(program, -1) {
			if strings.Contains(m[2], "const TA *") {
				continue // GK_GEMM's body: its instances follow
			}
			signatures[m[1]] = paramKinds(m[2])
		}
		gemm := paramKinds("int ta, int tb, int M, int N, int K, float alpha, const TA *A, int lda, const TB *B, int ldb, float beta, TC *C, int ldc")
		for _, m := range gemmRE.FindAllStringSubmatch(program, -1) {
			signatures[m[1]] = gemm
		}
	})
	return signatures
}

func paramKinds(params string) string {
	var b strings.Builder
	for _, p := range strings.Split(params, ",") {
		p = strings.TrimSpace(p)
		switch {
		case strings.Contains(p, "*"):
			b.WriteByte('p')
		case strings.HasPrefix(p, "gk_size "):
			b.WriteByte('s')
		case strings.HasPrefix(p, "float "):
			b.WriteByte('f')
		case strings.HasPrefix(p, "int "):
			b.WriteByte('i')
		default:
			panic(fmt.Sprintf("gpu: kernel parameter %q of an unknown kind", p))
		}
	}
	return b.String()
}

func argKinds(args []any) string {
	var b strings.Builder
	for _, a := range args {
		switch a.(type) {
		case Buf, uint64:
			b.WriteByte('p')
		case size:
			b.WriteByte('s')
		case float32:
			b.WriteByte('f')
		case int:
			b.WriteByte('i')
		default:
			b.WriteByte('?')
		}
	}
	return b.String()
}

func checkLaunch(name string, args []any) {
	want, ok := kernelSignatures()[name]
	if !ok {
		panic(fmt.Sprintf("gpu: no kernel %s in kernels/*.cu", name))
	}
	if got := argKinds(args); got != want {
		panic(fmt.Sprintf("gpu: launch %s with arguments %s, the kernel takes %s", name, got, want))
	}
}
