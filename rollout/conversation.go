package rollout

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"gorstar/chat"
	"gorstar/openai"
	"gorstar/pytool"
)

// Conversation is one interactive conversation with the Python tool (`gorstar chat`), by the
// rules of Loop: the first call of an assistant turn runs, and a malformed call, an unknown tool or
// a call without code gets back the same error text a rollout gives the model. A model answers
// through a Reply function, so one conversation serves the in-process engine and an endpoint
// alike.
type Conversation struct {
	Tools         pytool.Runner // nil: a turn's call is shown, not run, and ends the answer
	ToolTextChars int           // cut of the tool text the model sees (0: none)
	MaxTurns      int           // assistant turns per question at most (≥ 1)
	System        string        // the system message of each conversation ("" none)

	msgs []chat.Message
	done [][]chat.Message
}

// Reply is an assistant turn for the conversation so far: the message to keep, and the call its
// turn made (nil for none) as the template's parser (chat.ParseToolCall) or ServerToolCall reads it.
type Reply func(ctx context.Context, msgs []chat.Message) (chat.Message, *chat.ParsedToolCall, error)

// Ask adds the user's question and runs assistant turns and their tool calls until a turn makes no
// call, MaxTurns turns, or an error; tool is given each tool response as it comes. On an error the
// exchange is forgotten, so the conversation goes on as before the question.
func (c *Conversation) Ask(ctx context.Context, question string, reply Reply, tool func(text string)) error {
	if c.msgs == nil && c.System != "" {
		c.msgs = []chat.Message{{Role: chat.RoleSystem, Content: c.System}}
	}
	mark := len(c.msgs)
	c.msgs = append(c.msgs, chat.Message{Role: chat.RoleUser, Content: question})
	for turn := 0; turn < max(c.MaxTurns, 1); turn++ {
		msg, call, err := reply(ctx, c.msgs)
		if err != nil {
			c.msgs = c.msgs[:mark]
			return err
		}
		c.msgs = append(c.msgs, msg)
		if call == nil || c.Tools == nil || turn == c.MaxTurns-1 {
			break
		}
		text := ToolReply(ctx, c.Tools, *call, c.ToolTextChars)
		if tool != nil {
			tool(text)
		}
		c.msgs = append(c.msgs, chat.Message{Role: chat.RoleTool, Content: text, Name: pythonTool})
	}
	return nil
}

// Reset ends the conversation (it stays among Conversations) and starts a new one.
func (c *Conversation) Reset() {
	c.done = c.Conversations()
	c.msgs = nil
}

// Conversations are the conversations held so far, the current one last (none without a question).
func (c *Conversation) Conversations() [][]chat.Message {
	done := slices.Clone(c.done)
	if len(c.msgs) > 0 && c.msgs[len(c.msgs)-1].Role != chat.RoleSystem {
		done = append(done, slices.Clone(c.msgs))
	}
	return done
}

// ToolReply runs a parsed call on tools and returns the text the model sees: the sandbox's
// response cut to maxChars, or the error text of a call it cannot take (malformed, unknown tool,
// no code), as a rollout does.
func ToolReply(ctx context.Context, tools pytool.Runner, p chat.ParsedToolCall, maxChars int) string {
	call, refusal := toolCall(p)
	if refusal != "" {
		return refusal
	}
	return tools.Run(ctx, call).ToolText(maxChars)
}

// AssistantText splits generated text into the assistant's message (its content before a
// well-formed call, and the call) and the call it makes, nil for none.
func AssistantText(text string) (chat.Message, *chat.ParsedToolCall) {
	msg := chat.Message{Role: chat.RoleAssistant, Content: text}
	p, found := chat.ParseToolCall(text)
	if !found {
		return msg, nil
	}
	if p.Error == "" {
		msg.Content = strings.TrimRight(text[:p.Start], " \n")
		msg.ToolCalls = []chat.ToolCall{p.Call}
	}
	return msg, &p
}

// ServerToolCall is a call an endpoint's tool parser returned, as the template's parser reads one
// (arguments that are not JSON are a malformed call).
func ServerToolCall(tc openai.ToolCall) chat.ParsedToolCall {
	args := json.RawMessage(tc.Function.Arguments)
	if strings.TrimSpace(tc.Function.Arguments) == "" {
		args = json.RawMessage("{}")
	}
	if !json.Valid(args) {
		return chat.ParsedToolCall{Error: fmt.Sprintf("Error: the arguments of the call to %s are not JSON.", tc.Function.Name)}
	}
	return chat.ParsedToolCall{Call: chat.ToolCall{Name: tc.Function.Name, Arguments: args}}
}
