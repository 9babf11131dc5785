package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// runOpenAIGoResponses is Go code in a tool loop on the Responses API
// through openai-go: it asks the model, runs the click tool on the
// function_call the model made, sends its output back with the whole
// conversation (stateless: store is false), and expects the model's text.
// Streamed, it reads the events and takes the response.completed response.
func runOpenAIGoResponses(ctx context.Context, baseURL string, sc scenario, stream bool) result {
	client := openai.NewClient(option.WithBaseURL(baseURL), option.WithAPIKey("sk-e2e"))
	input := responses.ResponseInputParam{
		responses.ResponseInputItemParamOfMessage("Click myCoolButton.", responses.EasyInputMessageRoleUser),
	}
	params := responses.ResponseNewParams{
		Model: "gpt-e2e",
		Store: openai.Bool(false),
		Tools: []responses.ToolUnionParam{{OfFunction: &responses.FunctionToolParam{
			Name:        "click",
			Description: openai.String("Click an element of the page."),
			Parameters: map[string]any{
				"type":       "object",
				"properties": map[string]any{"selector": map[string]any{"type": "string"}},
				"required":   []string{"selector"},
			},
			Strict: openai.Bool(false),
		}}},
	}
	create := func() (*responses.Response, error) {
		params.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: input}
		if stream {
			return streamResponse(ctx, client, params)
		}
		return client.Responses.New(ctx, params)
	}

	resp, err := create()
	if err != nil {
		return openAIGoResponsesError(err, sc)
	}
	var calls []responses.ResponseFunctionToolCall
	for _, item := range resp.Output {
		if item.Type == "function_call" {
			calls = append(calls, item.AsFunctionCall())
		}
	}
	if len(calls) != 1 || calls[0].Name != "click" {
		return result{Observed: fmt.Sprintf("%d function calls", len(calls)), Detail: "want one call to click"}
	}
	res := clickGo(calls[0].Arguments, sc)
	if !res.OK {
		return res
	}
	call := calls[0].ToParam()
	out := responses.ResponseInputItemParamOfFunctionCallOutput("clicked")
	out.OfFunctionCallOutput.CallID = openai.String(calls[0].CallID)
	input = append(input, responses.ResponseInputItemUnionParam{OfFunctionCall: &call}, out)
	final, err := create()
	if err != nil {
		return result{Observed: res.Observed, Detail: "sending the tool's output back: " + err.Error()}
	}
	if text := final.OutputText(); text == "" {
		return result{Observed: res.Observed, Detail: "the model's answer to the tool's output has no text"}
	}
	return res
}

// streamResponse reads a Responses stream as openai-go hands it out, event
// by event, and returns the response of response.completed. An error event
// or response.failed becomes an errorEvent.
func streamResponse(ctx context.Context, client openai.Client, params responses.ResponseNewParams) (*responses.Response, error) {
	s := client.Responses.NewStreaming(ctx, params)
	defer s.Close()
	var final *responses.Response
	for s.Next() {
		switch ev := s.Current(); ev.Type {
		case "response.completed":
			r := ev.AsResponseCompleted().Response
			final = &r
		case "response.failed":
			e := ev.AsResponseFailed().Response.Error
			return nil, &errorEvent{Type: ev.Type, Code: string(e.Code), Message: e.Message}
		case "error":
			e := ev.AsError()
			return nil, &errorEvent{Type: ev.Type, Code: e.Code, Message: e.Message}
		}
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	if final == nil {
		return nil, errors.New("the stream ended without response.completed")
	}
	return final, nil
}

// errorEvent is an error the Responses stream delivered as an event, which
// openai-go hands to the caller as an event, not as an error.
type errorEvent struct {
	Type, Code, Message string
}

func (e *errorEvent) Error() string { return fmt.Sprintf("%s event %s: %s", e.Type, e.Code, e.Message) }

// openAIGoResponsesError is openAIGoError that also takes an error event of
// the stream as the SDK's own error.
func openAIGoResponsesError(err error, sc scenario) result {
	var ev *errorEvent
	if !errors.As(err, &ev) {
		return openAIGoError(err, sc)
	}
	r := result{Observed: ev.Error()}
	switch {
	case !sc.wantError:
		r.Detail = "want a valid call, got an error: " + err.Error()
	case !strings.Contains(ev.Message, toolguardMessage):
		r.Detail = fmt.Sprintf("error %q does not carry toolguard's message %q", ev.Message, toolguardMessage)
	}
	r.OK = r.Detail == ""
	return r
}
