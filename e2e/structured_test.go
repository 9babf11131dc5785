package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

// structuredScenarios are a model asked for {"city": string, "temperature":
// number} (a JSON-schema response format) that answers with broken JSON:
// first is its content, corrected its content when re-asked.
var structuredScenarios = []scenario{
	{name: "fenced", first: "```json\n{\"city\": \"Paris\", \"temperature\": 21}\n```"},
	{name: "prose", first: "Here is the weather: {\"city\": \"Paris\", \"temperature\": 21}. Enjoy!"},
	{name: "single-quotes-trailing-comma", first: "{'city': 'Paris', 'temperature': 21,}"},
	{name: "missing-field-reask", first: `{"city": "Paris"}`, corrected: `{"city":"Paris","temperature":21}`, wantReasks: 1},
	{name: "never-corrects", first: `{"city": "Paris"}`, corrected: `{"city": "Paris"}`, wantError: true, wantReasks: maxReasks},
}

// structuredClients are the clients of structured outputs, each through its
// own helper.
var structuredClients = []client{
	{name: "openai-go", run: runOpenAIGoStructured},
	nodeClient("openai-node", "openai-structured.mjs"),
	nodeClient("ai-sdk", "ai-sdk-structured.mjs"),
}

// startStructuredUpstream starts a chat completions endpoint whose model
// answers sc's content, and sc's corrected content to toolguard's re-ask
// (its last message says the reply is not valid for the response format).
func startStructuredUpstream(t *testing.T, sc scenario) *upstream {
	return startScripted(t, sc, func(u *upstream, w http.ResponseWriter, r *http.Request) {
		var req struct {
			Stream        bool `json:"stream"`
			StreamOptions struct {
				IncludeUsage bool `json:"include_usage"`
			} `json:"stream_options"`
		}
		var body []byte
		if !readScripted(w, r, "/v1/chat/completions", func(b []byte) bool { body = b; return json.Unmarshal(b, &req) == nil }) {
			return
		}
		kind, content := kindFirst, u.sc.first
		if strings.Contains(string(body), "not valid for the requested response format") {
			kind, content = kindReask, u.sc.corrected
		}
		n := u.record(kind)
		m := reply{content: content}
		id := fmt.Sprintf("chatcmpl-e2e%d", n)
		if req.Stream {
			writeStream(w, id, m, req.StreamOptions.IncludeUsage)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, completion(id, m))
	})
}

// TestStructuredClients runs the structured-output helpers of openai-go,
// the openai npm package and the AI SDK against a model that answers with
// broken JSON: straight to the model, then through toolguard.
func TestStructuredClients(t *testing.T) {
	runClients(t, &report{markers: "structured tables", clients: structuredClients, scenarios: structuredScenarios}, startStructuredUpstream)
}

// weather is the object the structured-output clients decode.
type weather struct {
	City        string  `json:"city"`
	Temperature float64 `json:"temperature"`
}

// runOpenAIGoStructured is Go code asking for a JSON-schema response format
// through openai-go and decoding the content into its type.
func runOpenAIGoStructured(ctx context.Context, baseURL string, sc scenario, stream bool) result {
	client := openai.NewClient(option.WithBaseURL(baseURL), option.WithAPIKey("sk-e2e"), option.WithMaxRetries(0))
	params := openai.ChatCompletionNewParams{
		Model:    "gpt-e2e",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("The weather in Paris, as JSON.")},
		ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{
				Name:   "weather",
				Strict: openai.Bool(true),
				Schema: map[string]any{
					"type":                 "object",
					"properties":           map[string]any{"city": map[string]any{"type": "string"}, "temperature": map[string]any{"type": "number"}},
					"required":             []string{"city", "temperature"},
					"additionalProperties": false,
				},
			},
		}},
	}
	var content string
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
		content = acc.Choices[0].Message.Content
	} else {
		resp, err := client.Chat.Completions.New(ctx, params)
		if err != nil {
			return openAIGoError(err, sc)
		}
		content = resp.Choices[0].Message.Content
	}
	var got weather
	if err := json.Unmarshal([]byte(content), &got); err != nil {
		return result{Observed: "json.Unmarshal error: " + err.Error()}
	}
	observed := fmt.Sprintf("decoded %+v", got)
	var raw map[string]any
	json.Unmarshal([]byte(content), &raw)
	switch {
	case sc.wantError:
		return result{Observed: observed, Detail: "the client decoded an object, want toolguard's error"}
	case !reflect.DeepEqual(raw, map[string]any{"city": "Paris", "temperature": 21.0}):
		return result{Observed: observed, Detail: fmt.Sprintf("content %s, want {city: Paris, temperature: 21}", content)}
	}
	return result{OK: true, Observed: observed}
}
