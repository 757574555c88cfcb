package data

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"gorstar/internal/usererr"
)

// Conversation is one row of the conversations table: an SFT example as a list of chat turns.
type Conversation struct {
	ID       string    `json:"id"`
	Messages []Message `json:"messages"`
}

// Message is one chat turn. Role is "system", "user", "assistant" or "tool". An assistant turn
// that calls the tool keeps the text before the call in Content and the call itself in ToolCalls;
// Text renders both the way the model writes them. Name is the tool's name on a "tool" turn.
type Message struct {
	Role      string     `json:"role"`
	Content   string     `json:"content"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	Name      string     `json:"name,omitempty"`
}

// ToolCall is one function call of an assistant turn. Arguments is a JSON object as text, kept
// byte for byte as it should appear in the rendered call.
//
// Storage: in Parquet, tool_calls is list<struct{name: string, arguments: string}>; in JSONL,
// {"name": N, "arguments": "<the JSON text>"} (a string, as OpenAI does, so the text survives byte
// for byte). Reading also accepts arguments as an object and the OpenAI form
// {"type": "function", "function": {"name", "arguments"}}.
type ToolCall struct {
	Name      string
	Arguments string
}

// MarshalJSON writes {"name": N, "arguments": "<JSON text>"}.
func (t ToolCall) MarshalJSON() ([]byte, error) {
	return jsonMarshal(struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}{t.Name, t.Arguments})
}

// UnmarshalJSON reads the gorstar form and the OpenAI form, arguments as an object or a string.
func (t *ToolCall) UnmarshalJSON(b []byte) error {
	var j struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Function  *struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	}
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	if j.Function != nil {
		j.Name, j.Arguments = j.Function.Name, j.Function.Arguments
	}
	t.Name = j.Name
	t.Arguments = "{}"
	if raw := bytes.TrimSpace(j.Arguments); len(raw) > 0 && raw[0] == '{' {
		t.Arguments = string(raw) // as written, spacing included
	} else if s, ok := jsonText(raw); ok {
		t.Arguments = s
	}
	return nil
}

// UnmarshalJSON accepts a null content as empty.
func (m *Message) UnmarshalJSON(b []byte) error {
	var j struct {
		Role      string     `json:"role"`
		Content   *string    `json:"content"`
		ToolCalls []ToolCall `json:"tool_calls"`
		Name      string     `json:"name"`
	}
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*m = Message{Role: j.Role, ToolCalls: j.ToolCalls, Name: j.Name}
	if j.Content != nil {
		m.Content = *j.Content
	}
	return nil
}

// Text is the turn as the model reads or writes it: the content, then each tool call rendered as
// <tool_call>\n{"name": …, "arguments": …}\n</tool_call>.
func (m Message) Text() string {
	if len(m.ToolCalls) == 0 {
		return m.Content
	}
	var b strings.Builder
	b.WriteString(m.Content)
	for _, tc := range m.ToolCalls {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(tc.Render())
	}
	return b.String()
}

// Render writes the call in the rStar2 tool-call format.
func (t ToolCall) Render() string {
	name, _ := jsonMarshal(t.Name)
	var b bytes.Buffer
	b.WriteString("<tool_call>\n{\"name\": ")
	b.Write(name)
	b.WriteString(", \"arguments\": ")
	b.WriteString(t.Arguments)
	b.WriteString("}\n</tool_call>")
	return b.String()
}

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
		w.call = w.calls.ValueBuilder().(*array.StructBuilder)
		w.callName = w.call.FieldBuilder(0).(*array.StringBuilder)
		w.callArgs = w.call.FieldBuilder(1).(*array.StringBuilder)
		return w, nil
	}
	return nil, unknownFormat(path)
}

// Write appends one conversation.
func (w *ConversationWriter) Write(c Conversation) error {
	w.count++
	if w.jl != nil {
		line, err := jsonMarshal(c)
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
		w.calls.Append(true)
		size += len(m.Role) + len(m.Content) + len(m.Name)
		for _, tc := range m.ToolCalls {
			w.call.Append(true)
			w.callName.Append(tc.Name)
			w.callArgs.Append(tc.Arguments)
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
// with role and content; tool_calls and name are optional, so files written by other tools
// (pyarrow, datasets) read too.
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
func (r *ConversationReader) Next() (Conversation, error) {
	if r.lines != nil {
		line, err := r.lines.next()
		if err != nil {
			return Conversation{}, err
		}
		obj, err := decodeObject(line)
		if err != nil {
			return Conversation{}, usererr.New("%s: %v", r.lines.where(), err)
		}
		var c Conversation
		c.ID, _ = jsonText(obj["id"])
		raw, ok := obj["messages"]
		if !ok {
			return Conversation{}, usererr.New("%s: missing field \"messages\" (fields found: %s)", r.lines.where(), fieldNames(obj))
		}
		if err := json.Unmarshal(raw, &c.Messages); err != nil {
			return Conversation{}, usererr.New("%s: field \"messages\": expected a list of {role, content} objects: %v", r.lines.where(), err)
		}
		return c, nil
	}
	rec, i, err := r.cursor.next()
	if err != nil {
		return Conversation{}, err
	}
	var c Conversation
	c.ID, _ = textAt(column(rec, "id"), i)
	msgs, err := messagesAt(column(rec, "messages"), i)
	if err != nil {
		return Conversation{}, usererr.New("%s row %d: %v", r.path, r.cursor.row, err)
	}
	c.Messages = msgs
	return c, nil
}

// messagesAt decodes row i of a list<struct{role, content, tool_calls?, name?}> column.
func messagesAt(arr arrow.Array, i int) ([]Message, error) {
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
	start, end := list.ValueOffsets(i)
	out := make([]Message, 0, end-start)
	for j := int(start); j < int(end); j++ {
		if st.IsNull(j) {
			continue
		}
		var m Message
		m.Role, _ = textAt(role, j)
		m.Content, _ = textAt(content, j)
		m.Name, _ = textAt(name, j)
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

func toolCallsAt(arr arrow.Array, j int) ([]ToolCall, error) {
	if arr.IsNull(j) {
		return nil, nil
	}
	if s, ok := arr.(stringValues); ok { // a JSON string, as some exporters store it
		var tcs []ToolCall
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
	var out []ToolCall
	for k := int(start); k < int(end); k++ {
		tc := ToolCall{Arguments: "{}"}
		tc.Name, _ = textAt(name, k)
		if a, ok := textAt(args, k); ok {
			tc.Arguments = a
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
func ReadAllConversations(path string) ([]Conversation, error) {
	r, err := OpenConversations(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out []Conversation
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
