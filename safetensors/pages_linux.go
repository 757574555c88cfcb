package safetensors

import "syscall"

// dropPages tells the kernel the pages of b (part of a read-only file mapping) are not needed
// now: they leave the process's resident set and refault from the file if read again.
func dropPages(b []byte) {
	syscall.Madvise(b, syscall.MADV_DONTNEED) //nolint:errcheck // advice only
}
