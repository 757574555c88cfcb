package rollout

import (
	"encoding/json"
	"fmt"
	"strings"

	"gorstar/chat"
	"gorstar/pytool"
)

// pythonTool is the one tool the loop runs (chat.PythonTool's name).
const pythonTool = "python"

// toolCall reads a parsed call into a sandbox call. A call the sandbox cannot take (malformed,
// unknown tool, no code) gives instead the error text that goes back to the model.
func toolCall(p chat.ParsedToolCall) (call pytool.Call, refusal string) {
	if p.Error != "" {
		return pytool.Call{}, p.Error
	}
	if p.Call.Name != pythonTool {
		return pytool.Call{}, fmt.Sprintf("Error: unknown tool %q; the tools are: %s.", p.Call.Name, pythonTool)
	}
	var args struct {
		Code  *string `json:"code"`
		Input *string `json:"input"`
	}
	if err := json.Unmarshal(p.Call.Arguments, &args); err != nil || args.Code == nil ||
		strings.TrimSpace(*args.Code) == "" {
		return pytool.Call{}, fmt.Sprintf(`Error: the call to %s needs a non-empty "code" string argument (and optionally an "input" string).`, pythonTool)
	}
	call.Code = *args.Code
	if args.Input != nil {
		call.Stdin = *args.Input
	}
	return call, ""
}

// failedByModel reports whether a result counts as a failed call of the model's (GRPO-RoC's p_err);
// internal sandbox failures do not.
func failedByModel(s pytool.Status) bool {
	return s != pytool.StatusOK && s != pytool.StatusInternal
}
