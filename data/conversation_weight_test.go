package data

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/array"

	"gorstar/chat"
)

// Tables written before messages had a weight (testdata: `data synth --sft` of the commit before,
// seed 5, 4 conversations, half of them recoveries) read as today's unmasked synth output, which
// writes no weight: the quickstart's SFT data did not change.
func TestReadConversationsBeforeWeights(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.jsonl")
	if _, err := Synth(context.Background(), SynthOptions{Task: "arith", N: 4, Out: path, SFT: true, RecoveryShare: 0.5, Seed: 5, Arith: DefaultArith()}); err != nil {
		t.Fatal(err)
	}
	want, err := ReadAllConversations(path)
	if err != nil {
		t.Fatal(err)
	}
	recoveries := 0
	for _, c := range want {
		if len(c.Messages) == 6 {
			recoveries++
		}
	}
	if recoveries != 2 {
		t.Fatalf("today's synth wrote %d recoveries in 4 conversations, want 2", recoveries)
	}
	for _, name := range []string{"conversations-before-weights.parquet", "conversations-before-weights.jsonl"} {
		got, err := ReadAllConversations(filepath.Join("testdata", name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", name, got, want)
		}
	}
}

// A weight other than 0 or 1, or on a message that is not the assistant's, is refused with the
// file, the row and the field.
func TestBadWeightsRefused(t *testing.T) {
	dir := t.TempDir()
	const good = `{"id": "a", "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "x", "weight": 0}]}`
	for _, c := range []struct{ line, want string }{
		{`{"id": "b", "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "x", "weight": 2}]}`,
			`bad.jsonl:2: messages[1].weight: expected 0 or 1, got 2`},
		{`{"id": "b", "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "x", "weight": 0.5}]}`,
			`bad.jsonl:2: messages[1]: expected a {role, content} object: weight: expected 0 or 1, got 0.5`},
		{`{"id": "b", "messages": [{"role": "user", "content": "q", "weight": 1}]}`,
			`bad.jsonl:2: messages[0].weight: only assistant messages carry a weight, this one is "user"`},
	} {
		path := filepath.Join(dir, "bad.jsonl")
		if err := os.WriteFile(path, []byte(good+"\n"+c.line+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ReadAllConversations(path)
		if err == nil || err.Error() != filepath.Join(dir, c.want) {
			t.Errorf("%s\n→ %v\nwant %s", c.line, err, filepath.Join(dir, c.want))
		}
	}
	for _, c := range []struct {
		role   string
		weight int64
		want   string
	}{
		{"assistant", 3, `bad.parquet row 2: messages[1].weight: expected 0 or 1, got 3`},
		{"tool", 0, `bad.parquet row 2: messages[1].weight: only assistant messages carry a weight, this one is "tool"`},
	} {
		path := filepath.Join(dir, "bad.parquet")
		writeWeightedParquet(t, path, c.role, c.weight)
		_, err := ReadAllConversations(path)
		if err == nil || err.Error() != filepath.Join(dir, c.want) {
			t.Errorf("%s weight %d\n→ %v\nwant %s", c.role, c.weight, err, filepath.Join(dir, c.want))
		}
	}
}

// writeWeightedParquet writes two conversations with gorstar's schema, the second's message 1
// having role and weight as given (which the writer does not check).
func writeWeightedParquet(t *testing.T, path, role string, weight int64) {
	t.Helper()
	rows := []chat.Conversation{
		{ID: "a", Messages: []chat.Message{{Role: "user", Content: "q"}, {Role: "assistant", Content: "x", Weight: chat.Weight(0)}}},
		{ID: "b", Messages: []chat.Message{{Role: "user", Content: "q"}, {Role: role, Content: "x"}}},
	}
	err := WriteParquet(path, conversationSchema(), len(rows), func(b *array.RecordBuilder, i int) int {
		b.Field(0).(*array.StringBuilder).Append(rows[i].ID)
		msgs := b.Field(1).(*array.ListBuilder)
		msgs.Append(true)
		st := msgs.ValueBuilder().(*array.StructBuilder)
		for k, m := range rows[i].Messages {
			st.Append(true)
			st.FieldBuilder(0).(*array.StringBuilder).Append(m.Role)
			st.FieldBuilder(1).(*array.StringBuilder).Append(m.Content)
			st.FieldBuilder(2).(*array.ListBuilder).Append(true)
			st.FieldBuilder(3).(*array.StringBuilder).Append("")
			switch {
			case i == 1 && k == 1:
				st.FieldBuilder(4).(*array.Int64Builder).Append(weight)
			case m.Weight != nil:
				st.FieldBuilder(4).(*array.Int64Builder).Append(int64(*m.Weight))
			default:
				st.FieldBuilder(4).(*array.Int64Builder).AppendNull()
			}
		}
		return 10
	})
	if err != nil {
		t.Fatal(err)
	}
}
