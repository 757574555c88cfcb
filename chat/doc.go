// Package chat renders conversations to token ids with a loss mask, and reads tool calls back out
// of the model's text.
//
// The layout is ChatML (<|im_start|>role … <|im_end|>). Templates are text/template files: the
// default "rstar2" follows rStar2-Agent (instructions and tool schemas in the system turn, tool
// calls as <tool_call> JSON, tool results returned as a user turn inside <tool_response>, the next
// assistant turn primed with <reason>); "chatml" is plain ChatML. Other templates are loaded from a
// path. A template marks the model's own text with {{gen_begin}} … {{gen_end}} and wraps message
// text in {{text …}}, so rendering knows which tokens the assistant produced (the SFT loss mask)
// and which text may not turn into control tokens.
//
// The rollout loop uses RenderPrompt for the first prompt, ParseToolCall on each generated turn,
// and Continuation for the tokens appended after it (tool result, next assistant header, primer).
package chat
