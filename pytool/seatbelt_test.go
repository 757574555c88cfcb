package pytool

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSeatbeltProfile checks the generated profile's rules and their order (Seatbelt lets a later
// rule override an earlier one): everything denied by default, no network rule at all, the system
// readable, homes and temporary trees hidden, the interpreter's prefixes readable again, writes
// only to the worker's own directory; and that paths are quoted for the profile's language.
func TestSeatbeltProfile(t *testing.T) {
	tmp := t.TempDir()
	py := filepath.Join(t.TempDir(), `odd "name"`, "python")
	if err := os.MkdirAll(py, 0o755); err != nil {
		t.Fatal(err)
	}
	paths, err := seatbeltPathsFor(tmp, []string{py})
	if err != nil {
		t.Fatal(err)
	}
	profile := seatbeltProfile(paths)
	realTmp, _ := filepath.EvalSymlinks(tmp)
	lines := strings.Split(strings.TrimSpace(profile), "\n")
	if lines[0] != "(version 1)" || lines[1] != "(deny default)" {
		t.Fatalf("the profile must start by denying everything:\n%s", profile)
	}
	if strings.Contains(profile, "network") {
		t.Errorf("the profile allows some network:\n%s", profile)
	}
	at := func(rule string) int {
		for i, l := range lines {
			if strings.HasPrefix(l, rule) {
				return i
			}
		}
		t.Fatalf("no rule %q in\n%s", rule, profile)
		return -1
	}
	readAll, hide, pyRead := at("(allow file-read*)"), at("(deny file-read* "), at("(allow file-read* (subpath")
	write := at("(allow file-read* file-write* (subpath " + seatbeltQuote(realTmp) + "))")
	if !(readAll < hide && hide < pyRead && pyRead < write) {
		t.Errorf("rules out of order (read all %d, hide %d, interpreter %d, tmp %d):\n%s", readAll, hide, pyRead, write, profile)
	}
	for _, h := range []string{`(subpath "/Users")`, `(subpath "/private/tmp")`, `(subpath "/private/var/folders")`} {
		if !strings.Contains(lines[hide], h) {
			t.Errorf("%s is not hidden: %s", h, lines[hide])
		}
	}
	if home, err := os.UserHomeDir(); err == nil {
		if real, err := filepath.EvalSymlinks(home); err == nil && !strings.Contains(lines[hide], seatbeltQuote(real)) {
			t.Errorf("the home directory %s is not hidden: %s", real, lines[hide])
		}
	}
	if want := `\"name\"`; !strings.Contains(lines[pyRead], want) {
		t.Errorf("the interpreter's path is not quoted (want %s): %s", want, lines[pyRead])
	}
	writes := 0
	for _, l := range lines {
		if strings.Contains(l, "file-write*") {
			writes++
		}
	}
	if writes != 1 {
		t.Errorf("want one writable tree (the worker's directory), got %d rules:\n%s", writes, profile)
	}
	argv, err := seatbeltArgv(tmp, []string{py}, []string{"python3", "-c", "1"})
	if err != nil || argv[0] != sandboxExec || argv[1] != "-p" || argv[2] != profile || argv[3] != "python3" {
		t.Errorf("seatbeltArgv = %q, %v", argv, err)
	}
	if _, err := seatbeltPathsFor("relative", nil); err == nil {
		t.Error("a relative worker directory was accepted")
	}
}
