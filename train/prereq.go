package train

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"

	"gorstar/config"
	"gorstar/internal/tooloptions"
	"gorstar/internal/usererr"
	"gorstar/pytool"
)

// checkPrerequisites checks, before any work, what the machine must have beyond the binary (the
// C kernels are compiled in): a Python 3 for the tool, or, with exec.endpoints, at least one of
// those exec serve nodes answering. What is optional is said on log: without bubblewrap the
// sandbox is Linux namespaces gorstar sets up itself; without sympy or numpy the model's code
// cannot import them; a node that does not answer is passed over. The notes are returned, to be
// shown once the run has started.
func checkPrerequisites(ctx context.Context, cfg config.Config) (notes []string, err error) {
	if len(cfg.Exec.Endpoints) > 0 {
		tools, err := pytool.Open(ctx, tooloptions.From(cfg.Exec), func(s string) { notes = append(notes, "note: "+s) })
		if err != nil {
			return nil, err
		}
		tools.Close()
		return notes, nil
	}
	python, _, err := pytool.ResolvePython(cfg.Exec.Python)
	if err != nil {
		return nil, usererr.New("exec.python %q: %v: the Python tool needs Python 3 (install python3 or set exec.python)",
			cfg.Exec.Python, oneLine(err))
	}
	if cfg.Exec.Sandbox == pytool.SandboxAuto && !pytool.BwrapAvailable() {
		notes = append(notes, "note: bubblewrap (bwrap) is not installed: the tool's sandbox uses Linux namespaces set up by gorstar")
	}
	probe := `import importlib.util as u; print(" ".join(m for m in ("sympy", "numpy") if u.find_spec(m) is None))`
	out, err := exec.CommandContext(ctx, python, "-c", probe).Output()
	if err != nil {
		return nil, usererr.New("exec.python %s does not run: %v", python, oneLine(err))
	}
	if missing := strings.Fields(string(out)); len(missing) > 0 {
		notes = append(notes, fmt.Sprintf("note: %s not installed for %s: the model's code cannot import %s (optional)",
			strings.Join(missing, " and "), python, strings.Join(missing, " or ")))
	}
	return notes, nil
}

func oneLine(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }

// diskFull turns a full disk into one line for the user. Checkpoints are written whole or not at
// all (model.SaveCheckpoint), so the previous one is intact and a rerun resumes from it.
func diskFull(err error) error {
	if errors.Is(err, syscall.ENOSPC) {
		return usererr.New("no space left on device: %s; the previous checkpoint is intact: free space and run the same command again to resume",
			oneLine(err))
	}
	return err
}
