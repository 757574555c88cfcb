package data

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"gorstar/internal/plainjson"
	"sort"
	"strings"
)

// Mapping says which input field feeds each problem column. A field is a top-level name or a dotted
// path into a nested object or struct ("reward_model.ground_truth"). Empty means "try the usual
// names" (the Default* lists) and use the first one the input has.
type Mapping struct {
	Problem string
	Answer  string
	ID      string
	Source  string

	answerOptional bool // reading problems only (evaluation sets for decontamination)
}

// Field names tried, in order, when a Mapping leaves a column empty. They cover the common public
// math datasets and the verl/rStar2 schema. "solution" is deliberately absent from the answer
// names: in most datasets it is a worked solution, not a final answer.
var (
	DefaultProblemFields = []string{"problem", "question", "prompt", "query", "instruction"}
	DefaultAnswerFields  = []string{"answer", "final_answer", "expected_answer", "ground_truth", "reward_model.ground_truth", "target"}
	DefaultIDFields      = []string{"id", "uid", "unique_id", "problem_id"}
	DefaultSourceFields  = []string{"source", "data_source", "dataset"}
)

// verlMapping is the verl/rStar2 schema: prompt is a list of {role, content} whose last user turn
// is the problem, reward_model.ground_truth the answer, data_source the source, extra_info the meta.
var verlMapping = Mapping{Problem: "prompt", Answer: "reward_model.ground_truth", Source: "data_source"}

// candidates returns the names to try for one column.
func candidates(explicit string, defaults []string) []string {
	if explicit != "" {
		return []string{explicit}
	}
	return defaults
}

// pickField returns the first candidate whose top-level part is among fields (and, for a dotted
// path, whose nested part exists when has says so), or "".
func pickField(cands []string, has func(path string) bool) string {
	for _, c := range cands {
		if has(c) {
			return c
		}
	}
	return ""
}

// topLevel is the first segment of a dotted path.
func topLevel(path string) string {
	top, _, _ := strings.Cut(path, ".")
	return top
}

// StableID names a problem that came without an id: the first 16 hex digits of the SHA-256 of its
// text, so the same problem gets the same id in every import.
func StableID(problem string) string {
	sum := sha256.Sum256([]byte(problem))
	return hex.EncodeToString(sum[:8])
}

// metaBuilder collects the input fields that no column took into the meta JSON object. Fields named
// meta or extra_info that hold objects are spread into it, so the verl extra_info struct and
// gorstar's own meta come back flat.
type metaBuilder struct {
	fields map[string]json.RawMessage
}

func (m *metaBuilder) reset() {
	if m.fields == nil {
		m.fields = make(map[string]json.RawMessage)
	}
	clear(m.fields)
}

func (m *metaBuilder) add(key string, raw json.RawMessage) {
	if key == "meta" || key == "extra_info" {
		var obj map[string]json.RawMessage
		inner := raw
		var s string
		if json.Unmarshal(raw, &s) == nil {
			inner = json.RawMessage(s)
		}
		if json.Unmarshal(inner, &obj) == nil && obj != nil {
			for k, v := range obj {
				if _, taken := m.fields[k]; !taken {
					m.fields[k] = v
				}
			}
			return
		}
	}
	if string(raw) == "null" {
		return
	}
	m.fields[key] = raw
}

// text renders the object with sorted keys and compact values; "{}" when empty.
func (m *metaBuilder) text() string {
	if len(m.fields) == 0 {
		return "{}"
	}
	keys := make([]string, 0, len(m.fields))
	for k := range m.fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		writeJSONKey(&b, k)
		b.WriteByte(':')
		raw := m.fields[k]
		if bytes.ContainsAny(raw, " \t\r\n") {
			if err := json.Compact(&b, raw); err != nil {
				b.WriteString("null")
			}
		} else {
			b.Write(raw)
		}
	}
	b.WriteByte('}')
	return b.String()
}

// writeJSONKey writes k as a JSON string; plain keys (the usual case) skip the encoder.
func writeJSONKey(b *bytes.Buffer, k string) {
	for i := 0; i < len(k); i++ {
		if c := k[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			kj, _ := plainjson.Marshal(k)
			b.Write(kj)
			return
		}
	}
	b.WriteByte('"')
	b.WriteString(k)
	b.WriteByte('"')
}
