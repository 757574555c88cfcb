package data

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"gorstar/chat"
	"gorstar/internal/plainjson"
	"gorstar/internal/usererr"
)

// conversationSchema is the Parquet form of a conversations table, whose rows are chat.Conversation:
// id string, messages list<struct{role, content string, tool_calls list<struct{name, arguments
// string}>, name string, weight int64 (null when unset)}>. In JSONL a row is chat.Conversation's
// JSON form (arguments as a string).
func conversationSchema() *arrow.Schema {
	str := arrow.BinaryTypes.String
	call := arrow.StructOf(
		arrow.Field{Name: "name", Type: str},
		arrow.Field{Name: "arguments", Type: str},
	)
	msg := arrow.StructOf(
		arrow.Field{Name: "role", Type: str},
		arrow.Field{Name: "content", Type: str},
		arrow.Field{Name: "tool_calls", Type: arrow.ListOfNonNullable(call)},
		arrow.Field{Name: "name", Type: str},
		arrow.Field{Name: "weight", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	)
	return arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: str},
		{Name: "messages", Type: arrow.ListOfNonNullable(msg)},
	}, nil)
}

// ConversationColumns are the columns of the conversations table, in order.
var ConversationColumns = []string{"id", "messages"}

// ConversationWriter writes a conversations table to .parquet or .jsonl; see ProblemWriter.
type ConversationWriter struct {
	tableSink

	id                  *array.StringBuilder
	msgs                *array.ListBuilder
	msg                 *array.StructBuilder
	role, content, name *array.StringBuilder
	weight              *array.Int64Builder
	calls               *array.ListBuilder
	call                *array.StructBuilder
	callName, callArgs  *array.StringBuilder
}

// CreateConversations starts a conversations table at path (.parquet, .jsonl or .jsonl.gz).
func CreateConversations(path string) (*ConversationWriter, error) {
	switch formatOf(path) {
	case formatJSONL:
		jl, err := createJSONL(path)
		if err != nil {
			return nil, err
		}
		return &ConversationWriter{tableSink: tableSink{jl: jl}}, nil
	case formatParquet:
		pq, err := createParquet(path, conversationSchema())
		if err != nil {
			return nil, err
		}
		w := &ConversationWriter{tableSink: tableSink{pq: pq}}
		w.id = pq.builder.Field(0).(*array.StringBuilder)
		w.msgs = pq.builder.Field(1).(*array.ListBuilder)
		w.msg = w.msgs.ValueBuilder().(*array.StructBuilder)
		w.role = w.msg.FieldBuilder(0).(*array.StringBuilder)
		w.content = w.msg.FieldBuilder(1).(*array.StringBuilder)
		w.calls = w.msg.FieldBuilder(2).(*array.ListBuilder)
		w.name = w.msg.FieldBuilder(3).(*array.StringBuilder)
		w.weight = w.msg.FieldBuilder(4).(*array.Int64Builder)
		w.call = w.calls.ValueBuilder().(*array.StructBuilder)
		w.callName = w.call.FieldBuilder(0).(*array.StringBuilder)
		w.callArgs = w.call.FieldBuilder(1).(*array.StringBuilder)
		return w, nil
	}
	return nil, unknownFormat(path)
}

// Write appends one conversation.
func (w *ConversationWriter) Write(c chat.Conversation) error {
	w.count++
	if w.jl != nil {
		line, err := plainjson.Marshal(c)
		if err != nil {
			return fmt.Errorf("write %s row %d: %w", w.jl.path, w.count, err)
		}
		return w.jl.writeLine(line)
	}
	size := len(c.ID)
	w.id.Append(c.ID)
	w.msgs.Append(true)
	for _, m := range c.Messages {
		w.msg.Append(true)
		w.role.Append(m.Role)
		w.content.Append(m.Content)
		w.name.Append(m.Name)
		if m.Weight != nil {
			w.weight.Append(int64(*m.Weight))
		} else {
			w.weight.AppendNull()
		}
		w.calls.Append(true)
		size += len(m.Role) + len(m.Content) + len(m.Name)
		for _, tc := range m.ToolCalls {
			w.call.Append(true)
			w.callName.Append(tc.Name)
			w.callArgs.Append(string(tc.Arguments))
			size += len(tc.Name) + len(tc.Arguments)
		}
	}
	return w.pq.rowAdded(size)
}

// ConversationReader streams a conversations table from Parquet or JSONL.
type ConversationReader struct {
	tableSource
}

// OpenConversations opens a conversations table. In Parquet, messages must be a list of structs
// with role and content; tool_calls, name and weight are optional, so files written by other tools
// (pyarrow, datasets) and by gorstar before weights read too. A weight other than 0 or 1, or on a
// message not the assistant's, is a user error naming the row and the message.
func OpenConversations(path string) (*ConversationReader, error) {
	return openConversations(context.Background(), path)
}

func openConversations(ctx context.Context, path string) (*ConversationReader, error) {
	src, err := openTableSource(ctx, path, func(pq *parquetFile) ([]int, error) {
		fields := make([]int, 0, len(ConversationColumns))
		for _, name := range ConversationColumns {
			idx := pq.fieldIndex(name)
			if idx < 0 {
				return nil, pq.missingColumn("conversations", name)
			}
			fields = append(fields, idx)
		}
		if err := checkMessagesType(path, pq.schema.Field(fields[1]).Type); err != nil {
			return nil, err
		}
		return fields, nil
	})
	if err != nil {
		return nil, err
	}
	return &ConversationReader{src}, nil
}

func checkMessagesType(path string, t arrow.DataType) error {
	list, ok := t.(arrow.ListLikeType)
	if !ok {
		return usererr.New("%s: column \"messages\" is %s, expected a list of {role, content} structs", path, t)
	}
	st, ok := list.Elem().(*arrow.StructType)
	if !ok {
		return usererr.New("%s: column \"messages\" is %s, expected a list of {role, content} structs", path, t)
	}
	for _, name := range []string{"role", "content"} {
		if _, ok := st.FieldByName(name); !ok {
			return usererr.New("%s: column \"messages\" has no field %q (fields found: %s)", path, name, structFieldNames(st))
		}
	}
	return nil
}

func structFieldNames(st *arrow.StructType) string {
	names := make([]string, st.NumFields())
	for i, f := range st.Fields() {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}

// Next returns the next conversation, or io.EOF after the last one.
func (r *ConversationReader) Next() (chat.Conversation, error) {
	if r.lines != nil {
		line, err := r.lines.next()
		if err != nil {
			return chat.Conversation{}, err
		}
		obj, err := decodeObject(line)
		if err != nil {
			return chat.Conversation{}, usererr.New("%s: %v", r.lines.where(), err)
		}
		var c chat.Conversation
		c.ID, _ = jsonText(obj["id"])
		raw, ok := obj["messages"]
		if !ok {
			return chat.Conversation{}, usererr.New("%s: missing field \"messages\" (fields found: %s)", r.lines.where(), fieldNames(obj))
		}
		if err := decodeMessages(raw, &c.Messages); err != nil {
			return chat.Conversation{}, usererr.New("%s: %v", r.lines.where(), err)
		}
		return c, nil
	}
	rec, i, err := r.cursor.next()
	if err != nil {
		return chat.Conversation{}, err
	}
	var c chat.Conversation
	c.ID, _ = textAt(column(rec, "id"), i)
	msgs, err := messagesAt(column(rec, "messages"), i)
	if err != nil {
		return chat.Conversation{}, usererr.New("%s row %d: %v", r.path, r.cursor.row, err)
	}
	c.Messages = msgs
	return c, nil
}

// decodeMessages reads the JSON list of messages, naming the message and field that is wrong.
func decodeMessages(raw json.RawMessage, out *[]chat.Message) error {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return fmt.Errorf("field \"messages\": expected a list of {role, content} objects: %v", err)
	}
	if items == nil {
		return nil
	}
	msgs := make([]chat.Message, len(items))
	for k, item := range items {
		if err := json.Unmarshal(item, &msgs[k]); err != nil {
			return fmt.Errorf("messages[%d]: expected a {role, content} object: %v", k, err)
		}
		if err := msgs[k].CheckWeight(); err != nil {
			return fmt.Errorf("messages[%d].weight: %v", k, err)
		}
	}
	*out = msgs
	return nil
}

// messagesAt decodes row i of a list<struct{role, content, tool_calls?, name?}> column.
func messagesAt(arr arrow.Array, i int) ([]chat.Message, error) {
	list, ok := arr.(array.ListLike)
	if !ok {
		return nil, fmt.Errorf("column \"messages\" is %s, expected a list", arr.DataType())
	}
	if list.IsNull(i) {
		return nil, nil
	}
	st, ok := list.ListValues().(*array.Struct)
	if !ok {
		return nil, fmt.Errorf("column \"messages\" holds %s, expected structs", list.ListValues().DataType())
	}
	role, content := structField(st, "role"), structField(st, "content")
	calls, name := structField(st, "tool_calls"), structField(st, "name")
	weight := structField(st, "weight")
	start, end := list.ValueOffsets(i)
	out := make([]chat.Message, 0, end-start)
	for j := int(start); j < int(end); j++ {
		if st.IsNull(j) {
			continue
		}
		k := j - int(start) // the message's place in the row
		var m chat.Message
		m.Role, _ = textAt(role, j)
		m.Content, _ = textAt(content, j)
		m.Name, _ = textAt(name, j)
		if w, ok := textAt(weight, j); ok {
			n, err := strconv.Atoi(w)
			if err != nil {
				return nil, fmt.Errorf("messages[%d].weight: expected 0 or 1, got %s", k, w)
			}
			m.Weight = &n
		}
		if err := m.CheckWeight(); err != nil {
			return nil, fmt.Errorf("messages[%d].weight: %v", k, err)
		}
		if calls != nil {
			tcs, err := toolCallsAt(calls, j)
			if err != nil {
				return nil, err
			}
			m.ToolCalls = tcs
		}
		out = append(out, m)
	}
	return out, nil
}

func toolCallsAt(arr arrow.Array, j int) ([]chat.ToolCall, error) {
	if arr.IsNull(j) {
		return nil, nil
	}
	if s, ok := arr.(stringValues); ok { // a JSON string, as some exporters store it
		var tcs []chat.ToolCall
		if err := json.Unmarshal([]byte(s.Value(j)), &tcs); err != nil {
			return nil, fmt.Errorf("field tool_calls: %v", err)
		}
		return tcs, nil
	}
	list, ok := arr.(array.ListLike)
	if !ok {
		return nil, fmt.Errorf("field tool_calls is %s, expected a list", arr.DataType())
	}
	st, ok := list.ListValues().(*array.Struct)
	if !ok {
		return nil, fmt.Errorf("field tool_calls holds %s, expected structs", list.ListValues().DataType())
	}
	name, args := structField(st, "name"), structField(st, "arguments")
	start, end := list.ValueOffsets(j)
	var out []chat.ToolCall
	for k := int(start); k < int(end); k++ {
		tc := chat.ToolCall{Arguments: json.RawMessage("{}")}
		tc.Name, _ = textAt(name, k)
		if a, ok := textAt(args, k); ok {
			tc.Arguments = json.RawMessage(a)
		}
		out = append(out, tc)
	}
	return out, nil
}

// structField returns the child array called name, or nil.
func structField(st *array.Struct, name string) arrow.Array {
	idx, ok := st.DataType().(*arrow.StructType).FieldIdx(name)
	if !ok {
		return nil
	}
	return st.Field(idx)
}

// ReadAllConversations reads a whole conversations table.
func ReadAllConversations(path string) ([]chat.Conversation, error) {
	r, err := OpenConversations(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out []chat.Conversation
	for {
		c, err := r.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
}
