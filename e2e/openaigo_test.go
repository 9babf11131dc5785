package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
)

// clickInput is the click tool's input as Go code declares it.
type clickInput struct {
	Selector string `json:"selector"`
}

// runOpenAIGo is Go code calling the model through openai-go and running the
// click tool the model asked for, streamed with the SDK's accumulator or not.
func runOpenAIGo(ctx context.Context, baseURL string, sc scenario, stream bool) result {
	client := openai.NewClient(option.WithBaseURL(baseURL), option.WithAPIKey("sk-e2e"))
	params := openai.ChatCompletionNewParams{
		Model:    "gpt-e2e",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Click myCoolButton.")},
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
			Name:        "click",
			Description: openai.String("Click an element of the page."),
			Parameters: openai.FunctionParameters{
				"type":       "object",
				"properties": map[string]any{"selector": map[string]any{"type": "string"}},
				"required":   []string{"selector"},
			},
		})},
	}
	var msg openai.ChatCompletionMessage
	if stream {
		s := client.Chat.Completions.NewStreaming(ctx, params)
		var acc openai.ChatCompletionAccumulator
		for s.Next() {
			acc.AddChunk(s.Current())
		}
		if err := s.Err(); err != nil {
			return openAIGoError(err, sc)
		}
		if len(acc.Choices) == 0 {
			return result{Observed: "no choices in the stream"}
		}
		msg = acc.Choices[0].Message
	} else {
		resp, err := client.Chat.Completions.New(ctx, params)
		if err != nil {
			return openAIGoError(err, sc)
		}
		msg = resp.Choices[0].Message
	}
	if len(msg.ToolCalls) != 1 || msg.ToolCalls[0].Function.Name != "click" {
		return result{Observed: fmt.Sprintf("%d tool calls", len(msg.ToolCalls))}
	}
	return clickGo(msg.ToolCalls[0].Function.Arguments, sc)
}

// clickGo is the click tool: it decodes its input into the declared type, as
// Go tool code does, and checks it got exactly what the model meant.
func clickGo(arguments string, sc scenario) result {
	var in clickInput
	if err := json.Unmarshal([]byte(arguments), &in); err != nil {
		return result{Observed: "json.Unmarshal error: " + err.Error()}
	}
	var got, want any
	json.Unmarshal([]byte(arguments), &got)
	json.Unmarshal([]byte(wantArgs), &want)
	observed := fmt.Sprintf("tool got {Selector: %q}", in.Selector)
	if !reflect.DeepEqual(got, want) {
		return result{Observed: observed, Detail: fmt.Sprintf("arguments %s, want %s", arguments, wantArgs)}
	}
	if sc.wantError {
		return result{Observed: observed, Detail: "the tool ran, want toolguard's error"}
	}
	return result{OK: true, Observed: observed}
}

// openAIGoError checks that the SDK's error carries toolguard's message: an
// *openai.Error with status 400, or the stream's error event.
func openAIGoError(err error, sc scenario) result {
	var apiErr *openai.Error
	var streamErr *ssestream.StreamError
	var r result
	var msg string
	switch {
	case errors.As(err, &apiErr):
		msg = apiErr.Message
		r.Observed = fmt.Sprintf("*openai.Error %d %s: %s", apiErr.StatusCode, apiErr.Type, msg)
		if apiErr.StatusCode != 400 {
			r.Detail = fmt.Sprintf("status %d, want 400", apiErr.StatusCode)
		}
	case errors.As(err, &streamErr):
		msg = streamErr.Message
		r.Observed = "*ssestream.StreamError: " + msg
	default:
		msg = err.Error()
		r.Observed = fmt.Sprintf("%T: %s", err, msg)
		r.Detail = "not an error type of the SDK"
	}
	switch {
	case !sc.wantError:
		r.Detail = "want a valid call, got an error: " + err.Error()
	case !strings.Contains(msg, toolguardMessage):
		r.Detail = fmt.Sprintf("error %q does not carry toolguard's message %q", msg, toolguardMessage)
	}
	r.OK = r.Detail == ""
	return r
}
