package config

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"gorstar/internal/testenv"
)

// libraries are the packages that take their own options and never import config (package doc).
var libraries = []string{"model", "engine", "reward", "data", "chat", "tokenizer", "kernels", "safetensors", "serve", "pytool"}

func TestLibrariesDoNotImportConfig(t *testing.T) {
	testenv.Short(t, "runs go list over the module")
	goTool := testenv.Command(t, "go", "install Go")
	for _, lib := range libraries {
		out, err := exec.Command(goTool, "list", "-deps", "gorstar/"+lib).Output()
		if err != nil {
			t.Fatalf("go list -deps gorstar/%s: %v", lib, err)
		}
		if slices.Contains(strings.Fields(string(out)), "gorstar/config") {
			t.Errorf("library package %s depends on gorstar/config; pass it its own options instead", lib)
		}
	}
}
