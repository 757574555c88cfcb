package reward

import "strings"

// maxResponseBytes bounds the text scanned for an answer. Longer responses are cut from the front:
// the final answer sits at the end.
const maxResponseBytes = 1 << 20

// ExtractAnswer finds the final answer in the model's own text: the last \boxed{} (or \fbox{})
// inside the last <answer> block when there is one, else the last box outside tool calls and tool
// responses, else the last "the answer is X" or "answer: X" phrase. It reports false when none.
func ExtractAnswer(response string) (string, bool) {
	text := modelText(tail(response))
	if block, ok := lastAnswerBlock(text); ok {
		if box, ok := lastBox(block); ok {
			return box, true
		}
		if phrase, ok := answerPhrase(block); ok {
			return phrase, true
		}
		if s := stripMath(block); s != "" && len(s) <= 200 {
			return s, true
		}
		return "", false
	}
	if box, ok := lastBox(text); ok {
		return box, true
	}
	return answerPhrase(text)
}

// extractAnywhere is the release's extraction: the last box in the whole decoded response, tool
// responses included.
func extractAnywhere(response string) (string, bool) {
	text := tail(response)
	if box, ok := lastBox(text); ok {
		return box, true
	}
	return answerPhrase(text)
}

func tail(s string) string {
	if len(s) > maxResponseBytes {
		return s[len(s)-maxResponseBytes:]
	}
	return s
}

// modelText removes what the model did not write as prose: tool responses (appended by the
// harness) and tool calls (code, whose printed boxes are not answers).
func modelText(s string) string {
	s = removeBlocks(s, "<tool_response>", "</tool_response>")
	return removeBlocks(s, "<tool_call>", "</tool_call>")
}

// removeBlocks deletes every open…close block; an unclosed block runs to the end of s.
func removeBlocks(s, open, close string) string {
	if !strings.Contains(s, open) {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, open)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		b.WriteByte('\n')
		rest := s[i+len(open):]
		j := strings.Index(rest, close)
		if j < 0 {
			return b.String()
		}
		s = rest[j+len(close):]
	}
}

// lastAnswerBlock returns the content of the last <answer> block; an unclosed one runs to the end.
func lastAnswerBlock(s string) (string, bool) {
	i := strings.LastIndex(s, "<answer>")
	if i < 0 {
		return "", false
	}
	block := s[i+len("<answer>"):]
	if j := strings.Index(block, "</answer>"); j >= 0 {
		block = block[:j]
	}
	return block, true
}

// lastBox returns the brace-matched content of the last complete \boxed{…} or \fbox{…} in s.
// "\boxed 5" (no braces) takes the next word.
func lastBox(s string) (string, bool) {
	best, bestAt := "", -1
	for _, cmd := range []string{`\boxed`, `\fbox`} {
		for end := len(s); ; {
			i := strings.LastIndex(s[:end], cmd)
			if i < 0 {
				break
			}
			end = i
			if i <= bestAt {
				break
			}
			if content, ok := boxContent(s[i+len(cmd):]); ok {
				best, bestAt = content, i
				break
			}
		}
	}
	return strings.TrimSpace(best), bestAt >= 0
}

func boxContent(s string) (string, bool) {
	t := strings.TrimLeft(s, " \t")
	if t == "" {
		return "", false
	}
	if t[0] != '{' {
		if len(t) < len(s) { // "\boxed 5": the rest of the word
			end := strings.IndexAny(t, " \t\n$")
			if end < 0 {
				end = len(t)
			}
			return t[:end], end > 0
		}
		return "", false // \boxedfoo is another command
	}
	depth := 0
	for i := 0; i < len(t); i++ {
		switch t[i] {
		case '\\':
			i++ // \{ and \} do not count
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return t[1:i], true
			}
		}
	}
	return "", false
}

// answerPhrase returns X from the last "the answer is X" / "answer: X" (any case), up to the end
// of the line or sentence.
func answerPhrase(s string) (string, bool) {
	lower := asciiLower(s)
	for end := len(lower); ; {
		i := strings.LastIndex(lower[:end], "answer")
		if i < 0 {
			return "", false
		}
		end = i
		rest := strings.TrimLeft(lower[i+len("answer"):], " \t")
		switch {
		case strings.HasPrefix(rest, ":"):
			rest = rest[1:]
		case strings.HasPrefix(rest, "is"):
			rest = strings.TrimPrefix(strings.TrimLeft(rest[2:], " \t"), ":")
		default:
			continue
		}
		v := s[len(s)-len(rest):] // the same bytes in the original case
		if nl := strings.IndexByte(v, '\n'); nl >= 0 {
			v = v[:nl]
		}
		if v = stripMath(cutSentence(v)); v != "" {
			return v, true
		}
	}
}

func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// cutSentence stops at a period followed by a space (not a decimal point) outside math.
func cutSentence(s string) string {
	inMath := false
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '$':
			inMath = !inMath
		case '.':
			if !inMath && (i+1 == len(s) || s[i+1] == ' ') {
				return s[:i]
			}
		}
	}
	return s
}

// stripMath trims spaces, math delimiters and a trailing period.
func stripMath(s string) string {
	s = strings.TrimSpace(s)
	for {
		t := strings.TrimSpace(strings.TrimSuffix(s, "."))
		for _, d := range [][2]string{{"$$", "$$"}, {"$", "$"}, {`\(`, `\)`}, {`\[`, `\]`}} {
			if len(t) >= len(d[0])+len(d[1]) && strings.HasPrefix(t, d[0]) && strings.HasSuffix(t, d[1]) {
				t = strings.TrimSpace(t[len(d[0]) : len(t)-len(d[1])])
			}
		}
		if t == s {
			return s
		}
		s = t
	}
}

// LastBox returns the content of the last \boxed{} (or \fbox{}) in s, the way graded responses
// are read, so that a dataset's answer taken from a worked solution matches what Grade extracts.
func LastBox(s string) (string, bool) { return lastBox(s) }
