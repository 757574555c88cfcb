package main

import "gorstar/kernels"

// kernelBackend names the numeric backend this binary was built with and the CPU features it
// chose at run time, e.g. "cpu-avx2".
func kernelBackend() string { return kernels.Backend() }
