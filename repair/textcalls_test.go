package repair

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// textTools are the tools declared for the text-call cases unless a case
// declares its own.
var textTools = []string{"get_weather", "search", "click", "get_time"}

var allTextFormats = TextFormats{Marked: true, BareJSON: true, ReAct: true}

type wantTextCall struct {
	name, args, format string
}

// textCallCase is one content: the calls it must convert to and the
// content left, or no call (want nil) when it must stay text. held says
// that TextCallHold keeps part of a negative's whole text (a marker whose
// call cannot be ruled out without the rest of the stream).
type textCallCase struct {
	name     string
	give     string
	formats  *TextFormats
	declared []string
	want     []wantTextCall
	content  string
	held     bool
}

const (
	dsOpen  = dsCallsBegin + dsCallBegin
	dsClose = dsCallEnd + dsCallsEnd
)

var textCallCases = []textCallCase{
	// Hermes and Qwen 2.5: JSON in <tool_call>.
	{name: "hermes", give: "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
		want: []wantTextCall{{"get_weather", `{"city": "Paris"}`, "hermes"}}},
	{name: "hermes-prose-before", give: "Let me check the weather.\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
		want: []wantTextCall{{"get_weather", `{"city": "Paris"}`, "hermes"}}, content: "Let me check the weather."},
	{name: "hermes-two", give: "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>",
		want: []wantTextCall{{"get_weather", `{"city": "Paris"}`, "hermes"}, {"get_time", `{}`, "hermes"}}},
	{name: "hermes-unclosed-last", give: `<tool_call>{"name": "search", "arguments": {"query": "go"}}`,
		want: []wantTextCall{{"search", `{"query": "go"}`, "hermes"}}},
	{name: "hermes-unclosed-last-end-token", give: "<tool_call>{\"name\": \"search\", \"arguments\": {\"query\": \"go\"}}\n<|im_end|>",
		want: []wantTextCall{{"search", `{"query": "go"}`, "hermes"}}},
	{name: "hermes-parameters-key", give: `<tool_call>{"name": "search", "parameters": {"query": "go"}}</tool_call>`,
		want: []wantTextCall{{"search", `{"query": "go"}`, "hermes"}}},
	// A call behind a marker keeps a name that is no declared tool, or
	// another word for one, as written: the ladder asks the model which
	// tool it meant.
	{name: "hermes-undeclared", give: `<tool_call>{"name": "delete_all", "arguments": {}}</tool_call>`,
		want: []wantTextCall{{"delete_all", `{}`, "hermes"}}},
	{name: "hermes-near-miss-name", give: `<tool_call>{"name": "lock_door", "arguments": {}}</tool_call>`, declared: []string{"unlock_door"},
		want: []wantTextCall{{"lock_door", `{}`, "hermes"}}},
	{name: "hermes-ambiguous-name", give: `<tool_call>{"name": "getdata", "arguments": {}}</tool_call>`, declared: []string{"get_data", "GetData"},
		want: []wantTextCall{{"getdata", `{}`, "hermes"}}},
	{name: "hermes-one-undeclared-of-two", give: `<tool_call>{"name": "search", "arguments": {"query": "go"}}</tool_call><tool_call>{"name": "launch", "arguments": {}}</tool_call>`,
		want: []wantTextCall{{"search", `{"query": "go"}`, "hermes"}, {"launch", `{}`, "hermes"}}},
	{name: "mistral-undeclared", give: `[TOOL_CALLS][{"name": "format_disk", "arguments": {}}]`,
		want: []wantTextCall{{"format_disk", `{}`, "mistral"}}},
	{name: "hermes-misspelt-name", give: `<tool_call>{"name": "getWeather", "arguments": {"city": "Oslo"}}</tool_call>`,
		want: []wantTextCall{{"get_weather", `{"city": "Oslo"}`, "hermes"}}},
	{name: "hermes-encoded-arguments", give: `<tool_call>{"name": "click", "arguments": "{\"selector\": \"#go\"}"}</tool_call>`,
		want: []wantTextCall{{"click", `{"selector": "#go"}`, "hermes"}}},
	{name: "hermes-python-quotes", give: `<tool_call>{'name': 'click', 'arguments': {'selector': '#go'}}</tool_call>`,
		want: []wantTextCall{{"click", `{"selector":"#go"}`, "hermes"}}},
	{name: "hermes-no-arguments", give: `<tool_call>{"name": "get_time"}</tool_call>`,
		want: []wantTextCall{{"get_time", `{}`, "hermes"}}},
	{name: "hermes-after-think", give: "<think>The user wants a search.</think>\n<tool_call>{\"name\": \"search\", \"arguments\": {\"query\": \"go\"}}</tool_call>",
		want: []wantTextCall{{"search", `{"query": "go"}`, "hermes"}}, content: "<think>The user wants a search.</think>"},
	{name: "hermes-after-template-think", give: "The user wants a search.\n</think>\n\n<tool_call>{\"name\": \"search\", \"arguments\": {\"query\": \"go\"}}</tool_call>",
		want: []wantTextCall{{"search", `{"query": "go"}`, "hermes"}}, content: "The user wants a search.\n</think>"},
	{name: "hermes-end-token", give: "<tool_call>{\"name\": \"get_time\", \"arguments\": {}}</tool_call><|im_end|>",
		want: []wantTextCall{{"get_time", `{}`, "hermes"}}},

	// Qwen3-Coder's XML, and Llama 3.1's <function=name>{...}</function>.
	{name: "qwen3-coder", give: "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>",
		want: []wantTextCall{{"get_weather", `{"city":"Paris","days":3}`, "qwen3-coder-xml"}}},
	{name: "qwen3-coder-no-outer-tag", give: "I will search.\n<function=search>\n<parameter=query>\nhello world\n</parameter>\n</function>",
		want: []wantTextCall{{"search", `{"query":"hello world"}`, "qwen3-coder-xml"}}, content: "I will search."},
	{name: "qwen3-coder-values", give: "<tool_call>\n<function=search>\n<parameter=query>\nline one\nline two\n</parameter>\n<parameter=filter>\n{\"lang\": \"en\"}\n</parameter>\n<parameter=exact>\ntrue\n</parameter>\n<parameter=note>\n<b>&</b>\n</parameter>\n</function>\n</tool_call>",
		want: []wantTextCall{{"search", `{"query":"line one\nline two","filter":{"lang":"en"},"exact":true,"note":"<b>&</b>"}`, "qwen3-coder-xml"}}},
	{name: "qwen3-coder-two", give: "<tool_call>\n<function=get_time>\n</function>\n</tool_call>\n<tool_call>\n<function=click>\n<parameter=selector>\n#go\n</parameter>\n</function>\n</tool_call>",
		want: []wantTextCall{{"get_time", `{}`, "qwen3-coder-xml"}, {"click", `{"selector":"#go"}`, "qwen3-coder-xml"}}},
	{name: "function-tag-json", give: `<function=get_weather>{"city": "Paris"}</function>`,
		want: []wantTextCall{{"get_weather", `{"city": "Paris"}`, "function-tag"}}},

	// GLM 4.5 and later.
	{name: "glm", give: "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Beijing</arg_value>\n<arg_key>days</arg_key>\n<arg_value>2</arg_value>\n</tool_call>",
		want: []wantTextCall{{"get_weather", `{"city":"Beijing","days":2}`, "glm"}}},
	{name: "glm-inline", give: "Searching now.<tool_call>search<arg_key>query</arg_key><arg_value>go generics</arg_value></tool_call>",
		want: []wantTextCall{{"search", `{"query":"go generics"}`, "glm"}}, content: "Searching now."},
	{name: "glm-no-arguments", give: "<tool_call>get_time\n</tool_call>",
		want: []wantTextCall{{"get_time", `{}`, "glm"}}},
	{name: "glm-json-value", give: "<tool_call>search\n<arg_key>filter</arg_key>\n<arg_value>{\"lang\": \"en\", \"year\": 2024}</arg_value>\n</tool_call>",
		want: []wantTextCall{{"search", `{"filter":{"lang":"en","year":2024}}`, "glm"}}},

	// Mistral.
	{name: "mistral-list", give: `[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "abc123def"}]`,
		want: []wantTextCall{{"get_weather", `{"city": "Paris"}`, "mistral"}}},
	{name: "mistral-list-two", give: "Checking both.\n[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, {\"name\": \"get_time\", \"arguments\": {}}]</s>",
		want: []wantTextCall{{"get_weather", `{"city": "Paris"}`, "mistral"}, {"get_time", `{}`, "mistral"}}, content: "Checking both."},
	{name: "mistral-args", give: `[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}`,
		want: []wantTextCall{{"get_weather", `{"city": "Paris"}`, "mistral"}}},
	{name: "mistral-args-two", give: `[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]get_time[ARGS]{}`,
		want: []wantTextCall{{"get_weather", `{"city": "Paris"}`, "mistral"}, {"get_time", `{}`, "mistral"}}},
	{name: "mistral-call-id", give: `[TOOL_CALLS]search[CALL_ID]a1b2c3d4e[ARGS]{"query": "go"}`,
		want: []wantTextCall{{"search", `{"query": "go"}`, "mistral"}}},
	{name: "mistral-name-then-object", give: `[TOOL_CALLS]get_weather{"city": "Paris"}`,
		want: []wantTextCall{{"get_weather", `{"city": "Paris"}`, "mistral"}}},

	// Llama 3 JSON.
	{name: "llama3-python-tag", give: `<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}<|eom_id|>`,
		want: []wantTextCall{{"get_weather", `{"city": "Paris"}`, "llama3-json"}}},
	{name: "llama3-python-tag-two", give: `<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}; {"name": "get_time", "parameters": {}}`,
		want: []wantTextCall{{"get_weather", `{"city": "Paris"}`, "llama3-json"}, {"get_time", `{}`, "llama3-json"}}},
	{name: "llama3-bare", give: `{"name": "get_weather", "parameters": {"city": "Paris"}}`,
		want: []wantTextCall{{"get_weather", `{"city": "Paris"}`, "llama3-json"}}},
	{name: "llama3-bare-type-function", give: "\n{\"type\": \"function\", \"name\": \"search\", \"parameters\": {\"query\": \"go\"}}\n",
		want: []wantTextCall{{"search", `{"query": "go"}`, "llama3-json"}}},
	{name: "bare-json-list", give: `[{"name": "click", "arguments": {"selector": "#go"}}, {"name": "get_time", "arguments": {}}]`,
		want: []wantTextCall{{"click", `{"selector": "#go"}`, "json-list"}, {"get_time", `{}`, "json-list"}}},

	// Pythonic call lists: Llama 3.2 and 4, LFM2.
	{name: "pythonic", give: `[get_weather(city="Paris"), search(query='go', max_results=5)]`,
		want: []wantTextCall{{"get_weather", `{"city":"Paris"}`, "pythonic"}, {"search", `{"query":"go","max_results":5}`, "pythonic"}}},
	{name: "pythonic-literals", give: `[search(query="a\"b\n", exact=True, tags=["x", 'y'], filter={'lang': 'en'}, page=None, ratio=-1.5,)]`,
		want: []wantTextCall{{"search", `{"query":"a\"b\n","exact":true,"tags":["x","y"],"filter":{"lang":"en"},"page":null,"ratio":-1.5}`, "pythonic"}}},
	{name: "pythonic-no-arguments", give: "  [get_time()]\n",
		want: []wantTextCall{{"get_time", `{}`, "pythonic"}}},
	{name: "pythonic-lfm2", give: `<|tool_call_start|>[get_weather(city="Paris")]<|tool_call_end|>Checking the weather now.`,
		want: []wantTextCall{{"get_weather", `{"city":"Paris"}`, "pythonic"}}, content: "Checking the weather now."},
	{name: "pythonic-llama4-marker", give: `<|python_start|>[get_time()]<|python_end|>`,
		want: []wantTextCall{{"get_time", `{}`, "pythonic"}}},

	// DeepSeek V3, R1 and V3.1.
	{name: "deepseek-v3", give: dsOpen + "function" + dsSep + "get_weather\n```json\n{\"city\": \"Tokyo\"}\n```" + dsClose,
		want: []wantTextCall{{"get_weather", `{"city": "Tokyo"}`, "deepseek"}}},
	{name: "deepseek-v3-two", give: "Let me look.\n" + dsOpen + "function" + dsSep + "get_weather\n```json\n{\"city\": \"Tokyo\"}\n```" + dsCallEnd + "\n" + dsCallBegin + "function" + dsSep + "get_time\n```json\n{}\n```" + dsClose,
		want: []wantTextCall{{"get_weather", `{"city": "Tokyo"}`, "deepseek"}, {"get_time", `{}`, "deepseek"}}, content: "Let me look."},
	{name: "deepseek-v31", give: dsOpen + "get_weather" + dsSep + `{"city": "Tokyo"}` + dsClose,
		want: []wantTextCall{{"get_weather", `{"city": "Tokyo"}`, "deepseek"}}},
	{name: "deepseek-v31-no-outer", give: dsCallBegin + "search" + dsSep + `{"query": "go"}` + dsCallEnd,
		want: []wantTextCall{{"search", `{"query": "go"}`, "deepseek"}}},
	{name: "deepseek-v31-outer-left-open", give: dsOpen + "search" + dsSep + `{"query": "go"}` + dsCallEnd,
		want: []wantTextCall{{"search", `{"query": "go"}`, "deepseek"}}},

	// Fenced JSON.
	{name: "fenced-json", give: "```json\n{\"name\": \"click\", \"arguments\": {\"selector\": \"#go\"}}\n```",
		want: []wantTextCall{{"click", `{"selector": "#go"}`, "fenced-json"}}},
	{name: "fenced-json-after-prose", give: "I'll click the button.\n```\n{\"name\": \"click\", \"arguments\": {\"selector\": \"#go\"}}\n```\n",
		want: []wantTextCall{{"click", `{"selector": "#go"}`, "fenced-json"}}, content: "I'll click the button."},

	// ReAct.
	{name: "react", give: "Thought: I need to search.\nAction: search\nAction Input: go generics",
		want: []wantTextCall{{"search", `"go generics"`, "react"}}, content: "Thought: I need to search."},
	{name: "react-json-input", give: "Action: get_weather\nAction Input: {\"city\": \"Paris\"}\n",
		want: []wantTextCall{{"get_weather", `{"city": "Paris"}`, "react"}}},
	{name: "react-python-dict-input", give: "Action: get_weather\nAction Input: {'city': 'Paris'}",
		want: []wantTextCall{{"get_weather", `{"city":"Paris"}`, "react"}}},
	{name: "react-stops-at-observation", give: "Action: search\nAction Input: go\nObservation:",
		want: []wantTextCall{{"search", `"go"`, "react"}}, content: "Observation:"},
	{name: "react-two", give: "Thought: first\nAction: search\nAction Input: go\nObservation: found\nThought: now click\nAction: click\nAction Input: #go",
		want: []wantTextCall{{"search", `"go"`, "react"}, {"click", `"#go"`, "react"}}, content: "Thought: first\nObservation: found\nThought: now click"},

	// Must stay text.
	{name: "prose-mentions-tool", give: "You can use get_weather to check the forecast, or search for anything else."},
	{name: "prose-plain", give: "The weather in Paris is mild today, with a light breeze from the west."},
	{name: "hermes-name-not-a-name", give: `<tool_call>{"name": "delete everything now", "arguments": {}}</tool_call>`},
	{name: "hermes-name-too-long", give: `<tool_call>{"name": "` + strings.Repeat("a", 65) + `", "arguments": {}}</tool_call>`},
	// Without a marker, a name that is no declared tool is no call.
	{name: "bare-json-near-miss-name", give: `{"name": "lock_door", "arguments": {}}`, declared: []string{"unlock_door"}, held: true},
	{name: "pythonic-near-miss-name", give: `[lock_door()]`, declared: []string{"unlock_door"}, held: true},
	{name: "hermes-in-think", give: "<think>Maybe <tool_call>{\"name\": \"search\", \"arguments\": {\"query\": \"x\"}}</tool_call></think>The answer is 4."},
	{name: "hermes-in-open-think", give: "<think>I could call <tool_call>{\"name\": \"search\", \"arguments\": {\"query\": \"x\"}}</tool_call>"},
	{name: "hermes-in-inline-code", give: "Write `<tool_call>{\"name\": \"search\", \"arguments\": {}}</tool_call>` to call a tool."},
	{name: "hermes-in-code-block", give: "A call is written so:\n```\n<tool_call>{\"name\": \"search\", \"arguments\": {}}</tool_call>\n```\n"},
	{name: "hermes-introduced-as-example", give: "For example:\n<tool_call>{\"name\": \"search\", \"arguments\": {\"query\": \"go\"}}</tool_call>"},
	// A closed block that names a tool but cannot be read is a call the
	// ladder re-asks, never text.
	{name: "hermes-truncated-arguments", give: `<tool_call>{"name": "search", "arguments": {"query": "go"</tool_call>`,
		want: []wantTextCall{{"search", `"{\"name\": \"search\", \"arguments\": {\"query\": \"go\""`, "hermes unread"}}},
	{name: "hermes-unclosed-truncated", give: `<tool_call>{"name": "search", "arguments": {"query": "go`, held: true},
	{name: "hermes-prose-after-json", give: `<tool_call>{"name": "search", "arguments": {"query": "go"}} and more</tool_call>`,
		want: []wantTextCall{{"search", `"{\"name\": \"search\", \"arguments\": {\"query\": \"go\"}} and more"`, "hermes unread"}}},
	{name: "hermes-extra-key", give: `<tool_call>{"name": "search", "arguments": {}, "reason": "because"}</tool_call>`,
		want: []wantTextCall{{"search", `"{\"name\": \"search\", \"arguments\": {}, \"reason\": \"because\"}"`, "hermes unread"}}},
	{name: "hermes-arguments-array", give: `<tool_call>{"name": "search", "arguments": [1]}</tool_call>`,
		want: []wantTextCall{{"search", `"{\"name\": \"search\", \"arguments\": [1]}"`, "hermes unread"}}},
	{name: "glm-prose-name", give: "<tool_call>I will now search the web</tool_call>"},
	{name: "glm-duplicate-key", give: "<tool_call>search<arg_key>q</arg_key><arg_value>a</arg_value><arg_key>q</arg_key><arg_value>b</arg_value></tool_call>"},
	{name: "qwen3-coder-unclosed-parameter", give: "<tool_call>\n<function=search>\n<parameter=query>\ngo\n</function>\n</tool_call>",
		want: []wantTextCall{{"search", `{"query":"go"}`, "qwen3-coder-xml"}}},
	{name: "mistral-broken-list", give: `[TOOL_CALLS][{"name": "search", "arguments": {"query": "go"}`, held: true},
	{name: "pythonic-positional", give: `[get_weather("Paris")]`, held: true},
	{name: "pythonic-expression", give: `[get_weather(city=home.city)]`, held: true},
	{name: "pythonic-with-prose", give: "Call [get_weather(city=\"Paris\")] when needed."},
	{name: "bracketed-prose", give: "[1] Introduction to the topic, and then more words."},
	{name: "llama3-bare-not-bare-json", give: `{"name": "get_weather", "parameters": {"city": "Paris"}}`, formats: &TextFormats{Marked: true}},
	{name: "llama3-bare-then-prose", give: `{"name": "get_weather", "parameters": {"city": "Paris"}} is how you would call it.`},
	{name: "json-object-not-a-call", give: `{"city": "Paris", "temperature": 21}`, held: true},
	{name: "fenced-example", give: "For example:\n```json\n{\"name\": \"search\", \"arguments\": {\"query\": \"go\"}}\n```"},
	{name: "fenced-then-prose", give: "```json\n{\"name\": \"search\", \"arguments\": {\"query\": \"go\"}}\n```\nThat is what a call looks like."},
	{name: "fenced-not-bare-json", give: "```json\n{\"name\": \"search\", \"arguments\": {\"query\": \"go\"}}\n```", formats: &TextFormats{Marked: true, ReAct: true}},
	{name: "fenced-python", give: "```python\nsearch(query=\"go\")\n```"},
	{name: "deepseek-unclosed-call", give: dsOpen + "search" + dsSep + `{"query": "go"}`, held: true},
	{name: "react-undeclared", give: "Thought: I should launch.\nAction: launch_rockets\nAction Input: now"},
	{name: "react-final-answer", give: "Thought: I know the answer.\nFinal Answer: 42"},
	{name: "react-action-and-final-answer", give: "Action: search\nAction Input: go\nFinal Answer: 42"},
	{name: "react-no-input", give: "Action: search\nThe search is done."},
	{name: "react-broken-json-input", give: "Action: search\nAction Input: {\"query\": \"go", held: true},
	{name: "react-not-react", give: "Action: search\nAction Input: go", formats: &TextFormats{Marked: true, BareJSON: true}},
	{name: "react-mid-line", give: "The next Action: search is not a step."},
	{name: "react-in-code-block", give: "```\nAction: search\nAction Input: go\n```"},
	{name: "empty", give: ""},
	{name: "spaces", give: " \n\t "},
}

func (tt textCallCase) args() ([]string, TextFormats) {
	declared, f := textTools, allTextFormats
	if tt.declared != nil {
		declared = tt.declared
	}
	if tt.formats != nil {
		f = *tt.formats
	}
	return declared, f
}

func TestTextCalls(t *testing.T) {
	for _, tt := range textCallCases {
		t.Run(tt.name, func(t *testing.T) {
			declared, f := tt.args()
			calls := TextCalls(tt.give, declared, f)
			var got []wantTextCall
			for _, c := range calls {
				format := c.Format
				if c.Unread {
					format += " unread"
				}
				if c.InProse {
					format += " prose"
				}
				got = append(got, wantTextCall{c.Name, string(c.Arguments), format})
			}
			if diff := cmp.Diff(got, tt.want, cmp.AllowUnexported(wantTextCall{})); diff != "" {
				t.Fatalf("TextCalls(%q) (-got +want):\n%s", tt.give, diff)
			}
			checkTextCalls(t, tt.give, declared, calls)
			if calls == nil {
				return
			}
			if got := TextContent(tt.give, calls); got != tt.content {
				t.Errorf("TextContent = %q, want %q", got, tt.content)
			}
		})
	}
}

// TestTextCallHold checks TextCallHold on every prefix of each case: a
// call is held from before its first byte until the text is complete;
// released text is never taken back; prose without a marker's first byte
// is never held; and a negative's whole text is released unless a marker
// in it keeps it held.
func TestTextCallHold(t *testing.T) {
	for _, tt := range textCallCases {
		t.Run(tt.name, func(t *testing.T) {
			declared, f := tt.args()
			calls := TextCalls(tt.give, declared, f)
			// Plain prose is text without a marker's first byte, whose
			// first word may not start one (GLM's name without its opener,
			// Phi-4's functools).
			first, _, _ := strings.Cut(strings.TrimSpace(tt.give), " ")
			plain := !strings.ContainsAny(tt.give, "<[{`A") && !strings.HasPrefix(functools, first[:min(len(first), 1)]) &&
				!strings.HasPrefix(first, ">") // Functionary's >>> where the content starts
			for _, d := range declared {
				plain = plain && (first == "" || !strings.HasPrefix(d, first[:1]))
			}
			prev := 0
			for i := 0; i <= len(tt.give); i++ {
				prefix := tt.give[:i]
				h := TextCallHold(prefix, declared, f)
				if h < 0 || h > i {
					t.Fatalf("TextCallHold(%q) = %d, out of range", prefix, h)
				}
				if h < prev {
					t.Fatalf("TextCallHold(%q) = %d, but %d bytes were already released", prefix, h, prev)
				}
				prev = max(prev, min(h, i))
				if plain && h != i {
					t.Fatalf("TextCallHold(%q) = %d: plain prose held", prefix, h)
				}
				if calls != nil && h > calls[0].Start {
					t.Fatalf("TextCallHold(%q) = %d: released the start of the call at %d", prefix, h, calls[0].Start)
				}
			}
			if h := TextCallHold(tt.give, declared, f); calls == nil && !tt.held && h != len(tt.give) {
				t.Errorf("TextCallHold(whole text) = %d, want %d: the text is no call", h, len(tt.give))
			}
		})
	}
}

// checkTextCalls checks what TextCalls promises of any result.
func checkTextCalls(t *testing.T, text string, declared []string, calls []TextCall) {
	t.Helper()
	if calls != nil && len(calls) == 0 {
		t.Fatalf("TextCalls(%q) = empty, not nil", text)
	}
	end := 0
	for _, c := range calls {
		if !contains(declared, c.Name) && (!marked[c.Format] || !validName(c.Name) || len(c.Name) > maxWrittenName) {
			t.Fatalf("TextCalls(%q): %q is not declared", text, c.Name)
		}
		if c.Start < end || c.End < c.Start || c.End > len(text) {
			t.Fatalf("TextCalls(%q): span [%d, %d) after %d is out of order or range", text, c.Start, c.End, end)
		}
		end = c.End
		if !json.Valid(c.Arguments) {
			t.Fatalf("TextCalls(%q): arguments %q are not JSON", text, c.Arguments)
		}
	}
	if len(calls) > maxTextCalls {
		t.Fatalf("TextCalls(%q): %d calls", text, len(calls))
	}
}

// marked are the formats whose calls may keep a name that is not declared
// (see TextCall.Name).
var marked = map[string]bool{
	"hermes": true, "qwen3-coder-xml": true, "function-tag": true, "glm": true, "mistral": true,
	"llama3-json": true, "json-list": true, "pythonic": true, "deepseek": true,
	"harmony": true, "kimi-k2": true, "granite": true, "hunyuan": true, "phi4": true,
	"minimax-m2": true, "deepseek-v3.2": true, "seed-oss": true, "internlm2": true, "command-r7b": true, "command-r": true, "gemma4": true, "hunyuan-v4": true, "functionary": true,
}

func TestTextCallsLimits(t *testing.T) {
	one := `<tool_call>{"name": "get_time", "arguments": {}}</tool_call>`
	if got := TextCalls(strings.Repeat(one, maxTextCalls), textTools, allTextFormats); len(got) != maxTextCalls {
		t.Errorf("%d calls: got %d", maxTextCalls, len(got))
	}
	if got := TextCalls(strings.Repeat(one, maxTextCalls+1), textTools, allTextFormats); got != nil {
		t.Errorf("%d calls: got %d, want none", maxTextCalls+1, len(got))
	}
	big := strings.Repeat("a", maxTextScan) + one
	if got := TextCalls(big, textTools, allTextFormats); got != nil {
		t.Errorf("text over %d bytes: got %d calls", maxTextScan, len(got))
	}
	if h := TextCallHold(big, textTools, allTextFormats); h != len(big) {
		t.Errorf("text over %d bytes held from %d", maxTextScan, h)
	}
	if got := TextCalls(one, nil, allTextFormats); got != nil {
		t.Errorf("no declared tools: got %d calls", len(got))
	}
	deep := "[search(query=" + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + ")]"
	if got := TextCalls(deep, textTools, allTextFormats); got != nil {
		t.Errorf("deep nesting: got %d calls", len(got))
	}
}

func TestTextCallHoldPartialMarkers(t *testing.T) {
	tests := []struct {
		give string
		want int
	}{
		{give: "Sure <", want: 5},
		{give: "Sure <tool_", want: 5},
		{give: "Sure <tool_x", want: 12},
		{give: "Sure [TOOL_C", want: 5},
		{give: "Sure [TOOL_X", want: 12},
		{give: "Sure <|python_t", want: 5},
		{give: "Sure <b>", want: 8},
		{give: "Sure <think", want: 11},
		{give: "Sure `<tool_call>` is a tag", want: 27},
		{give: "Thought: x\nAct", want: 11},
		{give: "Thought: x\nActing", want: 17},
		{give: "Action: search\nAction In", want: 0},
		{give: "Action: launch\nAction In", want: 24},
		{give: "Action: search\nNo input", want: 23},
		{give: "  {\"name\"", want: 2},
		{give: "{1}", want: 3},
		{give: "```js", want: 0},
		{give: "```jsx", want: 6},
		{give: "```json\nhello", want: 13},
	}
	for _, tt := range tests {
		if got := TextCallHold(tt.give, textTools, allTextFormats); got != tt.want {
			t.Errorf("TextCallHold(%q) = %d, want %d", tt.give, got, tt.want)
		}
	}
}

func TestTextContent(t *testing.T) {
	text := "Checking.\n<tool_call>{\"name\": \"get_time\", \"arguments\": {}}</tool_call> Then done."
	calls := TextCalls(text, textTools, allTextFormats)
	if got, want := TextContent(text, calls), "Checking.\nThen done."; got != want {
		t.Errorf("TextContent = %q, want %q", got, want)
	}
	inline := "I will <tool_call>{\"name\": \"get_time\", \"arguments\": {}}</tool_call> now."
	calls = TextCalls(inline, textTools, allTextFormats)
	if got, want := TextContent(inline, calls), "I will now."; got != want {
		t.Errorf("TextContent = %q, want %q", got, want)
	}
	if got := TextContent("as is", nil); got != "as is" {
		t.Errorf("TextContent without calls = %q", got)
	}
}
