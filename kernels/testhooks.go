package kernels

// #include <stddef.h>
// #include <stdint.h>
// long gk_expf_nonpos_mismatches(uint32_t from, uint32_t to);
// void gk_sgemm_serial(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda,
//                      const float *B, int ldb, float beta, float *C, int ldc);
// extern int gk_attention_prepack_queries;
// void gk_tile_dims(int *mr, int *nr);
// void gk_tile_pack_a(float *dst, const float *A, int lda, int trans, int m, int k);
// void gk_tile_pack_b(float *dst, const float *B, int ldb, int trans, int k, int n);
// void gk_tile_product(int m, int n, int k, float alpha, const float *a, long astride, const float *b, long bstride,
//                      float beta, float *C, int ldc);
// void gk_linear_forward_packed_repeat(int n, float *y, const float *x, const float *W, const float *Wp,
//                                      const float *b, int T, int in, int out);
// void gk_adamw_scalar(float *param, const float *grad, float *m, float *v, size_t n, float lr, float beta1,
//                      float beta2, float eps, float weight_decay, float grad_scale, int step);
import "C"

// C functions that only tests call: they compare a fast path of a kernel with its plain form.

// expfNonposMismatches counts the float32 bit patterns in [from, to] on which the decode
// softmax's exponential (gk_expf_nonpos, as its loops compile) and gk_expf disagree.
func expfNonposMismatches(from, to uint32) int {
	return int(C.gk_expf_nonpos_mismatches(C.uint32_t(from), C.uint32_t(to)))
}

// adamWScalar is AdamW with every element in the kernel's plain loop, never its AVX2 one.
func adamWScalar(param, grad, m, v Buf, n int, lr, beta1, beta2, eps, weightDecay, gradScale float32, step int) {
	C.gk_adamw_scalar(fp(param), fp(grad), fp(m), fp(v), C.size_t(n), C.float(lr), C.float(beta1), C.float(beta2),
		C.float(eps), C.float(weightDecay), C.float(gradScale), C.int(step))
}

// sgemmSerial is SGEMM on the calling thread through the microkernel whatever the shape (no
// few-rows path): what other kernels' small products ran on before tiles.
func sgemmSerial(transA, transB bool, M, N, K int, alpha float32, A Buf, lda int, B Buf, ldb int, beta float32, C_ Buf, ldc int) {
	C.gk_sgemm_serial(cbool(transA), cbool(transB), C.int(M), C.int(N), C.int(K), C.float(alpha), fp(A), C.int(lda),
		fp(B), C.int(ldb), C.float(beta), fp(C_), C.int(ldc))
}

// tileDims, tilePackA, tilePackB and tileProduct expose the tile products attention runs on
// (cpu.h) so that a test can hold them to the microkernel SGEMM's bits.
func tileDims() (mr, nr int) {
	var m, n C.int
	C.gk_tile_dims(&m, &n)
	return int(m), int(n)
}

func tilePackA(dst, a Buf, lda int, trans bool, m, k int) {
	C.gk_tile_pack_a(fp(dst), fp(a), C.int(lda), cbool(trans), C.int(m), C.int(k))
}

func tilePackB(dst, b Buf, ldb int, trans bool, k, n int) {
	C.gk_tile_pack_b(fp(dst), fp(b), C.int(ldb), cbool(trans), C.int(k), C.int(n))
}

func tileProduct(m, n, k int, alpha float32, a Buf, astride int, b Buf, bstride int, beta float32, c Buf, ldc int) {
	C.gk_tile_product(C.int(m), C.int(n), C.int(k), C.float(alpha), fp(a), C.long(astride), fp(b), C.long(bstride),
		C.float(beta), fp(c), C.int(ldc))
}

// setAttentionPrepack sets the queries per row from which the attention forward packs every key
// tile first (attention.c) and returns the old value; 0 always, a large value never.
func setAttentionPrepack(queries int) int {
	old := int(C.gk_attention_prepack_queries)
	C.gk_attention_prepack_queries = C.int(queries)
	return old
}

// linearForwardPackedRepeat is LinearForwardPacked n times over from one C call.
func linearForwardPackedRepeat(n int, y, x, w, wp, b Buf, T, in, out int) {
	C.gk_linear_forward_packed_repeat(C.int(n), fp(y), fp(x), fp(w), fp(wp), fp(b), C.int(T), C.int(in), C.int(out))
}
