package gpu

import (
	"os"
	"path/filepath"
)

// EnvCache names the directory of compiled kernels (default: the user's cache directory,
// gorstar/kernels).
const EnvCache = "GORSTAR_KERNEL_CACHE"

// CacheDir is where compiled kernels are kept, one file per source hash and architecture.
func CacheDir() string {
	if d := os.Getenv(EnvCache); d != "" {
		return d
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	return filepath.Join(base, "gorstar", "kernels")
}
