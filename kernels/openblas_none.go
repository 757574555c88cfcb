//go:build !openblas

package kernels

const haveOpenBLAS = false

func openblasSGEMM(transA, transB bool, M, N, K int, alpha float32, A Buf, lda int, B Buf, ldb int, beta float32, C_ Buf, ldc int) {
	panic("kernels: built without the openblas tag")
}

func openblasSetThreads(n int) {}
