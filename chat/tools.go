package chat

import (
	"encoding/json"
	"gorstar/internal/plainjson"
)

// PythonToolName is the name of rStar2's one tool.
const PythonToolName = "python"

// PythonTool is the schema of rStar2's one tool, the only Python tool schema in gorstar: run Python
// code with the given standard input. The template shows it in the system turn, so SFT data,
// rollouts, evaluation, `gorstar chat` and clients of `serve` that pass it as tools all show the
// model the same text. Only code is required; a call's arguments may omit input.
var PythonTool = json.RawMessage(`{"type": "function", "function": {"name": "` + PythonToolName + `", ` +
	`"description": "Run a Python program and return what it prints. Use it for calculations, checks and searches.", ` +
	`"parameters": {"type": "object", "properties": {` +
	`"code": {"type": "string", "description": "The Python program to run."}, ` +
	`"input": {"type": "string", "description": "Text given to the program on standard input."}}, ` +
	`"required": ["code"]}}}`)

// PythonCall is a call of the Python tool with code and standard input, its arguments written the
// way the model is taught to write them: {"code": "...", "input": "..."}.
func PythonCall(code, input string) ToolCall {
	c, _ := plainjson.Marshal(code)
	in, _ := plainjson.Marshal(input)
	return ToolCall{Name: PythonToolName, Arguments: json.RawMessage(`{"code": ` + string(c) + `, "input": ` + string(in) + `}`)}
}
