package data

// The system prompt and the tool schema of gorstar's multi-turn format live here, in one place,
// because synthesized SFT conversations, rollouts and chat all have to show the model the same
// text. The format follows rStar2-Agent: reasoning in <reason>, tool calls as
// <tool_call>\n{"name": …, "arguments": {…}}\n</tool_call>, results returned as
// <tool_response>, the final answer in <answer> with \boxed{}. The wording is gorstar's own and
// short, since the quickstart's tiny model has a small context.

// PythonToolName is the name of the one tool.
const PythonToolName = "python"

const toolSchemaJSON = `{"name": "python", "description": "Run Python 3 code; input is its stdin.", ` +
	`"parameters": {"type": "object", "properties": {"code": {"type": "string"}, "input": {"type": "string"}}, "required": ["code", "input"]}}`

const systemPromptText = "Think inside <reason></reason>. To run Python, write a <tool_call> " +
	"for the tool below and end your turn; its output comes back in <tool_response>. " +
	"Give the final answer as <answer>\\boxed{...}</answer>.\n<tools>\n" + toolSchemaJSON + "\n</tools>"

// ToolSchemaJSON is the JSON schema of the Python tool (parameters code and input), as shown to
// the model inside <tools></tools>.
func ToolSchemaJSON() string { return toolSchemaJSON }

// SystemPrompt is the system turn of every conversation: the instructions and the tool schema.
func SystemPrompt() string { return systemPromptText }

// PythonCall is a call of the Python tool with code and standard input, its arguments formatted
// the way the model is taught to write them: {"code": "...", "input": "..."}.
func PythonCall(code, input string) ToolCall {
	c, _ := jsonMarshal(code)
	in, _ := jsonMarshal(input)
	return ToolCall{Name: PythonToolName, Arguments: `{"code": ` + string(c) + `, "input": ` + string(in) + `}`}
}
