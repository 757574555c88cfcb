package sft

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"gorstar/chat"
	"gorstar/data"
	"gorstar/internal/usererr"
)

// Example is one rendered conversation.
type Example struct {
	Row int     // 1-based row of the conversation in its file
	IDs []int32 // the whole conversation as the template renders it
	// Mask[i] is set when token i is the assistant's: its loss (log p of token i given the tokens
	// before it) counts.
	Mask []bool
}

// Targets counts the tokens whose loss counts (token 0 has no context, so it never does).
func (e Example) Targets() int {
	n := 0
	for _, m := range e.Mask[min(1, len(e.Mask)):] {
		if m {
			n++
		}
	}
	return n
}

// Dataset is a rendered conversations table after the overlong policy.
type Dataset struct {
	Examples  []Example
	Dropped   int // conversations left out: longer than the limit (policy drop), or no assistant token left after truncation
	Truncated int // conversations cut to the limit (policy truncate)
}

// Overlong policies: what happens to a conversation of more than MaxSeqLen tokens.
const (
	OverlongTruncate = "truncate" // keep the first MaxSeqLen tokens
	OverlongDrop     = "drop"     // leave the conversation out
)

// LoadExamples reads a conversations table, checks every conversation (a user error names the file,
// row and field of the first bad one) and renders it with r, applying the overlong policy to
// conversations longer than maxLen tokens.
func LoadExamples(path string, r *chat.Renderer, maxLen int, overlong string) (Dataset, error) {
	convs, err := data.ReadAllConversations(path)
	if err != nil {
		return Dataset{}, err
	}
	if len(convs) == 0 {
		return Dataset{}, usererr.New("%s: no conversations", path)
	}
	var ds Dataset
	for i, c := range convs {
		msgs := c.Messages
		if err := checkConversation(msgs); err != nil {
			return Dataset{}, usererr.New("%s row %d: %v", path, i+1, err)
		}
		ids, mask, err := r.Render(msgs)
		if err != nil {
			return Dataset{}, usererr.New("%s row %d: %v", path, i+1, err)
		}
		ex := Example{Row: i + 1, IDs: ids, Mask: mask}
		if len(ids) > maxLen {
			if overlong == OverlongDrop {
				ds.Dropped++
				continue
			}
			ex.IDs, ex.Mask = ids[:maxLen], mask[:maxLen]
			ds.Truncated++
		}
		if ex.Targets() == 0 { // nothing of the assistant's survived truncation
			ds.Dropped++
			continue
		}
		ds.Examples = append(ds.Examples, ex)
	}
	if len(ds.Examples) == 0 {
		return Dataset{}, usererr.New("%s: all %d conversations are longer than max_seq_len %d tokens", path, len(convs), maxLen)
	}
	return ds, nil
}

// checkConversation enforces what training on a conversation needs: it starts with the system
// or the user, tool calls carry JSON-object arguments, every tool message answers a call, and
// the assistant says something to learn from (a turn of weight 0 is context, not that).
func checkConversation(msgs []chat.Message) error {
	if len(msgs) == 0 {
		return errors.New("messages: empty conversation")
	}
	if r := msgs[0].Role; r != chat.RoleSystem && r != chat.RoleUser {
		return fmt.Errorf("messages[0].role: a conversation starts with system or user, got %q", r)
	}
	pending := 0                      // calls of the last assistant turn not yet answered
	assistant, learnt := false, false // an assistant turn; one in the loss (weight not 0)
	for i, m := range msgs {
		switch m.Role {
		case chat.RoleAssistant:
			assistant = true
			learnt = learnt || m.InLoss()
			pending = len(m.ToolCalls)
			for j, tc := range m.ToolCalls {
				if tc.Name == "" {
					return fmt.Errorf("messages[%d].tool_calls[%d].name: empty", i, j)
				}
				if args := bytes.TrimSpace(tc.Arguments); len(args) == 0 || args[0] != '{' || !json.Valid(args) {
					return fmt.Errorf("messages[%d].tool_calls[%d].arguments: not a JSON object: %q", i, j, clip(string(tc.Arguments), 60))
				}
			}
		case chat.RoleTool:
			if pending == 0 {
				return fmt.Errorf("messages[%d]: a tool message without a preceding assistant tool call", i)
			}
			pending--
		case chat.RoleSystem, chat.RoleUser:
			pending = 0
		default:
			return fmt.Errorf("messages[%d].role: %q is not one of system, user, assistant, tool", i, m.Role)
		}
	}
	if !assistant {
		return errors.New("messages: no assistant turn to learn from")
	}
	if !learnt {
		return errors.New("messages: no assistant turn to learn from (every one has weight 0)")
	}
	return nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
