//go:build !linux

package safetensors

// dropPages does nothing where the standard library has no madvise: the pages a load touched stay
// resident until Close.
func dropPages(b []byte) {}
