// Package gpu runs gorstar's kernels on NVIDIA and AMD GPUs with libraries loaded at run time:
// one `go build` binary runs on a machine without a GPU, on an NVIDIA GPU (the CUDA driver API,
// NVRTC, cuBLAS, NCCL) and on an AMD GPU (HIP, hipRTC, rocBLAS, RCCL).
//
// shim.h lists every library function gorstar calls, with signatures written from the vendors'
// C ABIs; a table of function pointers per library is filled with dlopen and dlsym (no vendor
// header, no -l flag). A library that is absent, or lacks a symbol, is a one-line error naming
// it. The kernels (kernels/*.cu) are one source for both vendors through gk_compat.h, embedded
// in the binary and compiled at run time for the device's architecture, cached on disk by source
// hash and architecture. See README.md.
package gpu
