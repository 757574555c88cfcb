package chat

import (
	"fmt"
	"path"
)

// HFChatTemplate returns the Jinja version of a built-in template, for the "chat_template" field of
// tokenizer_config.json: with it, transformers' apply_chat_template and vLLM's chat endpoint render
// conversations exactly as gorstar does (the rstar2 version has the primer <reason> built in and
// takes the tool schemas as `tools`).
func HFChatTemplate(name string) (string, error) {
	if name == "" {
		name = DefaultTemplate
	}
	src, err := builtinTemplates.ReadFile(path.Join("templates", name+".jinja"))
	if err != nil {
		return "", fmt.Errorf("no Hugging Face version of chat template %q", name)
	}
	return string(src), nil
}
