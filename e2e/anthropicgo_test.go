package e2e

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
)

// runAnthropicGo is Go code in a tool loop on the Messages API through
// anthropic-sdk-go: it asks the model, runs the click tool on the tool_use
// block the model made, sends the assistant's content and a tool_result
// back with the whole conversation, and expects the model's text.
// Streamed, it accumulates the events into the message as the SDK's
// documentation shows (Message.Accumulate).
func runAnthropicGo(ctx context.Context, baseURL string, sc scenario, stream bool) result {
	// The SDK's base URL is the API's origin: it adds /v1/messages itself.
	client := anthropic.NewClient(option.WithBaseURL(strings.TrimSuffix(baseURL, "/v1")+"/"), option.WithAPIKey("sk-e2e"), option.WithMaxRetries(0))
	params := anthropic.MessageNewParams{
		Model:     "claude-e2e",
		MaxTokens: 1024,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Click myCoolButton."))},
		Tools: []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{
			Name:        "click",
			Description: anthropic.String("Click an element of the page."),
			InputSchema: anthropic.ToolInputSchemaParam{
				Properties: map[string]any{"selector": map[string]any{"type": "string"}},
				Required:   []string{"selector"},
			},
		}}},
	}
	ask := func() (*anthropic.Message, error) {
		if !stream {
			return client.Messages.New(ctx, params)
		}
		s := client.Messages.NewStreaming(ctx, params)
		defer s.Close()
		var m anthropic.Message
		for s.Next() {
			if err := m.Accumulate(s.Current()); err != nil {
				return nil, err
			}
		}
		if err := s.Err(); err != nil {
			return nil, err
		}
		return &m, nil
	}

	m, err := ask()
	if err != nil {
		return anthropicGoError(err, sc, stream)
	}
	var calls []anthropic.ToolUseBlock
	for _, b := range m.Content {
		if b.Type == "tool_use" {
			calls = append(calls, b.AsToolUse())
		}
	}
	if len(calls) != 1 || calls[0].Name != "click" {
		return result{Observed: fmt.Sprintf("%d tool_use blocks", len(calls)), Detail: "want one call to click"}
	}
	if m.StopReason != anthropic.StopReasonToolUse {
		return result{Observed: "stop_reason " + string(m.StopReason), Detail: "a tool_use block with another stop_reason"}
	}
	res := clickGo(string(calls[0].Input), sc)
	if !res.OK {
		return res
	}
	params.Messages = append(params.Messages, m.ToParam(),
		anthropic.NewUserMessage(anthropic.NewToolResultBlock(calls[0].ID, "clicked", false)))
	final, err := ask()
	if err != nil {
		return result{Observed: res.Observed, Detail: "sending the tool's result back: " + err.Error()}
	}
	text := ""
	for _, b := range final.Content {
		if b.Type == "text" {
			text += b.AsText().Text
		}
	}
	if text == "" {
		return result{Observed: res.Observed, Detail: "the model's answer to the tool's result has no text"}
	}
	return res
}

// anthropicGoError checks that the SDK's error carries toolguard's message:
// an *anthropic.Error with status 400, or, streamed, the *anthropic.Error a
// stream's error event became (with the stream's status, 200).
func anthropicGoError(err error, sc scenario, stream bool) result {
	var apiErr *anthropic.Error
	var r result
	// The SDK's message starts with the method and URL, whose port changes
	// from run to run.
	msg := requestURL.ReplaceAllString(err.Error(), "")
	if errors.As(err, &apiErr) {
		r.Observed = fmt.Sprintf("*anthropic.Error %d: %s", apiErr.StatusCode, clip(msg, 200))
		if apiErr.StatusCode != 400 && !stream {
			r.Detail = fmt.Sprintf("status %d, want 400", apiErr.StatusCode)
		}
	} else {
		r.Observed = fmt.Sprintf("%T: %s", err, clip(msg, 200))
	}
	switch {
	case !sc.wantError:
		r.Detail = "want a valid call, got an error: " + msg
	case !strings.Contains(msg, toolguardMessage):
		r.Detail = fmt.Sprintf("error %q does not carry toolguard's message %q", clip(msg, 300), toolguardMessage)
	}
	r.OK = r.Detail == ""
	return r
}

// requestURL is the method and URL that begin the SDK's error messages.
var requestURL = regexp.MustCompile(`^[A-Z]+ "[^"]*": `)
