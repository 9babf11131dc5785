package proxy

import "github.com/toolguard/toolguard/proxy/internal/wire"

// The shapes of the chat completion bodies that toolguard reads.
var (
	chatFunctionShape = wire.Shape{"name": nil, "arguments": nil, "parameters": nil, "description": nil, "strict": nil}
	chatCallShape     = wire.Shape{"id": nil, "type": nil, "index": nil, "function": chatFunctionShape}
	chatMessageShape  = wire.Shape{
		"role": nil, "content": nil, "refusal": nil, "name": nil, "tool_call_id": nil,
		"tool_calls": chatCallShape, "function_call": chatFunctionShape,
		"reasoning_content": nil, "reasoning": nil,
	}
	chatRequestShape = wire.Shape{
		"model": nil, "stream": nil, "n": nil, "stream_options": wire.Shape{"include_usage": nil},
		"messages":      chatMessageShape,
		"tools":         wire.Shape{"type": nil, "function": chatFunctionShape},
		"functions":     chatFunctionShape,
		"tool_choice":   wire.Shape{"type": nil, "function": chatFunctionShape},
		"function_call": chatFunctionShape,
		"response_format": wire.Shape{"type": nil, "json_schema": wire.Shape{
			"name": nil, "schema": nil, "strict": nil, "description": nil}},
	}
	chatUsageShape    = wire.Shape{"prompt_tokens": nil, "completion_tokens": nil, "total_tokens": nil}
	chatResponseShape = wire.Shape{
		"model": nil, "usage": chatUsageShape, "error": nil,
		"choices": wire.Shape{"index": nil, "finish_reason": nil, "message": chatMessageShape},
	}
	chatChunkShape = wire.Shape{
		"model": nil, "usage": chatUsageShape, "error": nil,
		"choices": wire.Shape{"index": nil, "finish_reason": nil, "delta": chatMessageShape},
	}
)
