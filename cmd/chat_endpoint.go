package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"gorstar/chat"
	"gorstar/internal/usererr"
	"gorstar/openai"
	"gorstar/rollout"
)

// endpointChat asks an OpenAI-compatible server through the openai client.
type endpointChat struct {
	url, model  string
	client      *openai.Client
	tools       []json.RawMessage
	maxTokens   int
	temperature float64
}

// endpointCheckTimeout bounds the first question to the endpoint: a server that does not list its
// models within it is not one chat can talk to.
const endpointCheckTimeout = 10 * time.Second

// newEndpointChat connects to url (one endpoint: no metrics scrape) and asks for its models before
// the first question, so a wrong address or model name is one line at start, not an error in the
// middle of a conversation.
func newEndpointChat(ctx context.Context, url, model string) (*endpointChat, error) {
	url = strings.TrimRight(url, "/")
	c, err := openai.New(openai.Options{Endpoints: []string{url}, Model: model, ScrapeEvery: -1})
	if err != nil {
		return nil, usererr.New("--endpoint %s: %v", url, err)
	}
	ctx, cancel := context.WithTimeout(ctx, endpointCheckTimeout)
	defer cancel()
	lists, err := c.Models(ctx)
	ids, ok := lists[c.Endpoints()[0]]
	why := strings.TrimPrefix(fmt.Sprint(err), "openai: list models: "+c.Endpoints()[0]+" ")
	switch {
	case !ok && ctx.Err() != nil:
		c.Close()
		return nil, usererr.New("--endpoint %s: no answer within %s", url, endpointCheckTimeout)
	case !ok && (strings.Contains(why, "HTTP ") || strings.Contains(why, "not a model list")):
		c.Close()
		return nil, usererr.New("--endpoint %s: not an OpenAI-compatible server (GET /v1/models: %s)", url, strings.Trim(why, "()"))
	case !ok:
		c.Close()
		return nil, usererr.New("--endpoint %s: nothing answers %s", url, why)
	case model != "" && !slices.Contains(ids, model):
		c.Close()
		return nil, usererr.New("--served-model %s: %s serves %s", model, url, strings.Join(ids, ", "))
	}
	return &endpointChat{url: url, model: model, client: c}, nil
}

func (e *endpointChat) close() { e.client.Close() }

func (e *endpointChat) turn(ctx context.Context, msgs []chat.Message, out io.Writer) (chat.Message, *chat.ParsedToolCall, error) {
	req := openai.ChatRequest{Tools: e.tools, MaxTokens: e.maxTokens, Temperature: e.temperature}
	for _, m := range msgs {
		om := openai.ChatMessage{Role: m.Role, Content: m.Content, Name: m.Name}
		for _, c := range m.ToolCalls {
			om.ToolCalls = append(om.ToolCalls, openai.ToolCall{Type: "function",
				Function: openai.FunctionCall{Name: c.Name, Arguments: string(c.Arguments)}})
		}
		req.Messages = append(req.Messages, om)
	}
	answer, err := e.client.Chat(ctx, req)
	switch status := openai.HTTPStatus(err); {
	case err == nil:
	case ctx.Err() != nil:
		return chat.Message{}, nil, ctx.Err()
	case status >= http.StatusBadRequest && status < http.StatusInternalServerError:
		// The server refused this conversation (it fills the context, …): say so and go on.
		return chat.Message{}, nil, &turnRefused{fmt.Sprintf("--endpoint %s", strings.TrimPrefix(err.Error(), "openai: "))}
	default:
		return chat.Message{}, nil, usererr.New("--endpoint %s: %v", e.url, err)
	}
	m := answer.Message
	reply := chat.Message{Role: chat.RoleAssistant, Content: m.Content}
	fmt.Fprint(out, reply.Content)
	for _, c := range m.ToolCalls {
		args := json.RawMessage(c.Function.Arguments)
		if !json.Valid(args) {
			args = json.RawMessage("{}")
		}
		reply.ToolCalls = append(reply.ToolCalls, chat.ToolCall{Name: c.Function.Name, Arguments: args})
		fmt.Fprintf(out, "\n<tool_call>\n{\"name\": %q, \"arguments\": %s}\n</tool_call>", c.Function.Name, args)
	}
	if len(m.ToolCalls) == 0 {
		return reply, nil, nil
	}
	call := rollout.ServerToolCall(m.ToolCalls[0])
	return reply, &call, nil
}
