package train

import (
	"os"
	osexec "os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestRecordCommandReplacesAStageAndKeepsOrder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "commands.sh")
	steps := []StageCommand{
		{Stage: "data", Args: []string{"gorstar", "data", "synth", "--out", "run/data/train.parquet"}},
		{Stage: "sft", Args: []string{"gorstar", "sft", "--out", "run/sft"}},
		{Stage: "data", Args: []string{"gorstar", "data", "synth", "--n", "10"}}, // recorded again on resume
	}
	for _, s := range steps {
		if err := RecordCommand(path, s); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ReadCommands(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []StageCommand{steps[2], steps[1]}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	if fi, _ := os.Stat(path); fi.Mode()&0o100 == 0 {
		t.Errorf("commands.sh is not executable: %v", fi.Mode())
	}
}

// The recorded line must mean, to a real shell, exactly the words recorded.
func TestRecordedCommandRunsInAShellWordForWord(t *testing.T) {
	sh, err := osexec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	words := []string{"it's", "a b", "$HOME", "", "back\\slash", "tab\there", `"dq"`, "--set=rl.lr=1e-6", "*"}
	path := filepath.Join(t.TempDir(), "commands.sh")
	if err := RecordCommand(path, StageCommand{Stage: "echo", Args: append([]string{"printf", "[%s]\\n"}, words...)}); err != nil {
		t.Fatal(err)
	}
	out, err := osexec.Command(sh, path).Output()
	if err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	for _, w := range words {
		want.WriteString("[" + w + "]\n")
	}
	if string(out) != want.String() {
		t.Fatalf("shell saw\n%s\nwant\n%s", out, want.String())
	}
	got, err := ReadCommands(path)
	if err != nil || !reflect.DeepEqual(got[0].Args[2:], words) {
		t.Fatalf("read back %q, %v", got, err)
	}
}
