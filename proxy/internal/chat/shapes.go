package chat

import "github.com/toolguard/toolguard/proxy/internal/wire"

// The shapes of the chat completion bodies that toolguard reads.
var (
	functionShape = wire.Shape{"name": nil, "arguments": nil, "parameters": nil, "description": nil, "strict": nil}
	callShape     = wire.Shape{"id": nil, "type": nil, "index": nil, "function": functionShape}
	messageShape  = wire.Shape{
		"role": nil, "content": nil, "refusal": nil, "name": nil, "tool_call_id": nil,
		"tool_calls": callShape, "function_call": functionShape,
		"reasoning_content": nil, "reasoning": nil,
	}
	requestShape = wire.Shape{
		"model": nil, "stream": nil, "n": nil, "stream_options": wire.Shape{"include_usage": nil},
		"messages":      messageShape,
		"tools":         wire.Shape{"type": nil, "function": functionShape},
		"functions":     functionShape,
		"tool_choice":   wire.Shape{"type": nil, "function": functionShape},
		"function_call": functionShape,
		"response_format": wire.Shape{"type": nil, "json_schema": wire.Shape{
			"name": nil, "schema": nil, "strict": nil, "description": nil}},
	}
	usageShape    = wire.Shape{"prompt_tokens": nil, "completion_tokens": nil, "total_tokens": nil}
	responseShape = wire.Shape{
		"model": nil, "usage": usageShape, "error": nil,
		"choices": wire.Shape{"index": nil, "finish_reason": nil, "message": messageShape},
	}
	chunkShape = wire.Shape{
		"model": nil, "usage": usageShape, "error": nil,
		"choices": wire.Shape{"index": nil, "finish_reason": nil, "delta": messageShape},
	}
)
