package chat

import "encoding/json"

// PythonTool is the schema of rStar2's one tool: run Python code with the given standard input.
var PythonTool = json.RawMessage(`{"type": "function", "function": {"name": "python", ` +
	`"description": "Run a Python program and return what it prints. Use it for calculations, checks and searches.", ` +
	`"parameters": {"type": "object", "properties": {` +
	`"code": {"type": "string", "description": "The Python program to run."}, ` +
	`"input": {"type": "string", "description": "Text given to the program on standard input."}}, ` +
	`"required": ["code"]}}}`)
