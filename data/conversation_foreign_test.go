package data

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet"
	"github.com/apache/arrow/go/v17/parquet/pqarrow"

	"gorstar/chat"
)

// A conversations file from another tool: nullable fields, no name column, tool_calls as a JSON
// string, an extra column.
func TestReadForeignConversations(t *testing.T) {
	str := arrow.BinaryTypes.String
	msg := arrow.StructOf(
		arrow.Field{Name: "content", Type: str, Nullable: true},
		arrow.Field{Name: "role", Type: str, Nullable: true},
		arrow.Field{Name: "tool_calls", Type: str, Nullable: true},
	)
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: str, Nullable: true},
		{Name: "messages", Type: arrow.ListOf(msg), Nullable: true},
		{Name: "score", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	b.Field(0).(*array.StringBuilder).Append("x1")
	lb := b.Field(1).(*array.ListBuilder)
	lb.Append(true)
	mb := lb.ValueBuilder().(*array.StructBuilder)
	mb.Append(true)
	mb.FieldBuilder(0).(*array.StringBuilder).Append("hi")
	mb.FieldBuilder(1).(*array.StringBuilder).Append("user")
	mb.FieldBuilder(2).(*array.StringBuilder).AppendNull()
	mb.Append(true)
	mb.FieldBuilder(0).(*array.StringBuilder).AppendNull()
	mb.FieldBuilder(1).(*array.StringBuilder).Append("assistant")
	mb.FieldBuilder(2).(*array.StringBuilder).Append(`[{"type": "function", "function": {"name": "python", "arguments": "{\"code\": \"1+1\"}"}}]`)
	b.Field(2).(*array.Float64Builder).Append(0.5)
	rec := b.NewRecord()
	defer rec.Release()

	path := filepath.Join(t.TempDir(), "foreign.parquet")
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	fw, err := pqarrow.NewFileWriter(sc, out, parquet.NewWriterProperties(), pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := ReadAllConversations(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []chat.Conversation{{ID: "x1", Messages: []chat.Message{
		{Role: "user", Content: "hi"},
		{Role: "assistant", ToolCalls: []chat.ToolCall{{Name: "python", Arguments: json.RawMessage(`{"code": "1+1"}`)}}},
	}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}
