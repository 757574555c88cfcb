//go:build openblas

package kernels

// The OpenBLAS peer for the SGEMM benchmark (build tag openblas, needs libopenblas-dev). Nothing
// but the benchmark uses it.

/*
#cgo LDFLAGS: -lopenblas
void cblas_sgemm(int order, int transa, int transb, int m, int n, int k, float alpha, const float *a, int lda,
                 const float *b, int ldb, float beta, float *c, int ldc);
void openblas_set_num_threads(int n);
*/
import "C"

const haveOpenBLAS = true

func openblasSGEMM(transA, transB bool, M, N, K int, alpha float32, A Buf, lda int, B Buf, ldb int, beta float32, C_ Buf, ldc int) {
	const rowMajor, noTrans, trans = 101, 111, 112
	ta, tb := noTrans, noTrans
	if transA {
		ta = trans
	}
	if transB {
		tb = trans
	}
	C.cblas_sgemm(rowMajor, C.int(ta), C.int(tb), C.int(M), C.int(N), C.int(K), C.float(alpha), fp(A), C.int(lda),
		fp(B), C.int(ldb), C.float(beta), fp(C_), C.int(ldc))
}

func openblasSetThreads(n int) { C.openblas_set_num_threads(C.int(n)) }
