package train

import (
	"fmt"
	"os"
	"strings"

	"gorstar/internal/atomicfile"
)

// commandsHeader opens commands.sh.
const commandsHeader = `#!/bin/sh
# Each stage of this run as one gorstar command, in order. Rerun a line to redo that stage by
# hand, or replace its output and continue with ` + "`gorstar train --from NEXT_STAGE`" + `.
set -e
`

// stagePrefix marks the comment line above each stage's command.
const stagePrefix = "# stage: "

// StageCommand is one stage's equivalent command line.
type StageCommand struct {
	Stage string
	Args  []string // the program first ("gorstar", …)
}

// RecordCommand writes stage's command into the commands.sh at path: in place of the stage's
// previous line when it has one (a resumed run records the same stage again), else at the end.
// The file is replaced atomically and is executable.
func RecordCommand(path string, cmd StageCommand) error {
	cmds, err := ReadCommands(path)
	if err != nil {
		return err
	}
	replaced := false
	for i := range cmds {
		if cmds[i].Stage == cmd.Stage {
			cmds[i], replaced = cmd, true
		}
	}
	if !replaced {
		cmds = append(cmds, cmd)
	}
	var b strings.Builder
	b.WriteString(commandsHeader)
	for _, c := range cmds {
		fmt.Fprintf(&b, "\n%s%s\n%s\n", stagePrefix, c.Stage, ShellLine(c.Args))
	}
	if err := atomicfile.WriteBytes(path, []byte(b.String())); err != nil {
		return err
	}
	return os.Chmod(path, 0o755)
}

// ReadCommands returns the stages recorded in the commands.sh at path (none when it is missing),
// each command as its shell line split back into words.
func ReadCommands(path string) ([]StageCommand, error) {
	raw, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var out []StageCommand
	lines := strings.Split(string(raw), "\n")
	for i, line := range lines {
		stage, ok := strings.CutPrefix(line, stagePrefix)
		if !ok || i+1 >= len(lines) {
			continue
		}
		args, err := splitShellLine(lines[i+1])
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, i+2, err)
		}
		out = append(out, StageCommand{Stage: stage, Args: args})
	}
	return out, nil
}

// ShellLine joins args into one POSIX shell line, quoting every word that needs it.
func ShellLine(args []string) string {
	words := make([]string, len(args))
	for i, a := range args {
		words[i] = shellQuote(a)
	}
	return strings.Join(words, " ")
}

// shellQuote leaves plain words alone and single-quotes the rest (a quote inside is closed, escaped, reopened).
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// splitShellLine reverses ShellLine: words separated by spaces, single-quoted parts and \'.
func splitShellLine(line string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord, quoted := false, false
	for i := 0; i < len(line); i++ {
		ch := line[i]
		switch {
		case quoted && ch == '\'':
			quoted = false
		case quoted:
			cur.WriteByte(ch)
		case ch == '\'':
			quoted, inWord = true, true
		case ch == '\\' && i+1 < len(line):
			i++
			cur.WriteByte(line[i])
			inWord = true
		case ch == ' ':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(ch)
			inWord = true
		}
	}
	if quoted {
		return nil, fmt.Errorf("unterminated quote in %q", line)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}
