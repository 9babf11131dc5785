package repair

import (
	"strings"
	"testing"
)

// The corpus of written calls, by format: positives, negatives (text that
// must reach the client as it is) and malformed calls. Each case also runs
// through TestTextCallHold, streamed at every split point.

const (
	kOpen  = kSectionBegin + kCallBegin
	kClose = kCallEnd + kSectionEnd
)

var textCorpus = []textCallCase{
	// Pythonic lists whose arguments hold dicts and lists, JSON literals
	// included (the same values in another language's form).
	{name: "pythonic-dict-json-literals", give: `[get_weather(config={"enabled": true, "units": null}, days=[1, 2])]`,
		want: []wantTextCall{{"get_weather", `{"config":{"enabled":true,"units":null},"days":[1,2]}`, "pythonic"}}},
	{name: "pythonic-lfm2-nested", give: `<|tool_call_start|>[search(query="go", filter={"lang": ["en", "fr"], "year": 2024})]<|tool_call_end|>`,
		want: []wantTextCall{{"search", `{"query":"go","filter":{"lang":["en","fr"],"year":2024}}`, "pythonic"}}},
	{name: "pythonic-lfm2-two", give: `<|tool_call_start|>[get_time(), click(selector="#go")]<|tool_call_end|>`,
		want: []wantTextCall{{"get_time", `{}`, "pythonic"}, {"click", `{"selector":"#go"}`, "pythonic"}}},
	{name: "pythonic-lfm2-undeclared", give: `<|tool_call_start|>[launch(now=True)]<|tool_call_end|>`,
		want: []wantTextCall{{"launch", `{"now":true}`, "pythonic"}}},
	// On lines of its own between prose: read with bare JSON, never as an
	// example.
	{name: "pythonic-prose-around", give: "Here is the result:\n[get_weather(city=\"Paris\")]\nWould you like to know more?",
		want: []wantTextCall{{"get_weather", `{"city":"Paris"}`, "pythonic prose"}}, content: "Here is the result:\nWould you like to know more?"},
	{name: "pythonic-prose-example", give: "For example, you could write:\n[get_weather(city=\"Paris\")]\n"},
	{name: "pythonic-prose-marked-only", give: "Here is the result:\n[get_weather(city=\"Paris\")]\nWould you like to know more?", formats: &TextFormats{Marked: true}},
	{name: "pythonic-prose-then-example", give: "[get_weather(city=\"Paris\")]\nThat is how a call looks like."},
	{name: "pythonic-prose-two-blocks", give: "First:\n[get_time()]\nThen:\n[click(selector=\"#go\")]\n"},
	{name: "pythonic-prose-undeclared", give: "Now:\n[launch(now=True)]\n"},
	{name: "pythonic-inline-code", give: "Run `[get_time()]` to see the time."},
	{name: "pythonic-unclosed-string", give: `[search(query="go)]`, held: true},
	{name: "pythonic-dict-number-key", give: `[search(filter={1: "a"})]`, held: true},

	// Hermes: arguments that are a plain string, and a list with a call
	// that cannot be read (re-asked with the others, never left out).
	{name: "hermes-string-arguments", give: `<tool_call>{"name": "search", "arguments": "hello"}</tool_call>`,
		want: []wantTextCall{{"search", `"hello"`, "hermes"}}},
	{name: "hermes-list-one-malformed", give: "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": }\n</tool_call>",
		want: []wantTextCall{{"get_time", `{}`, "hermes"}, {"search", `"{\"name\": \"search\", \"arguments\": {\"query\": }"`, "hermes unread"}}},
	{name: "hermes-malformed-no-name", give: `<tool_call>{"arguments": {"query": "go"</tool_call>`},

	// Qwen3-Coder's XML variants.
	{name: "qwen3-coder-missing-close-then-next", give: "<tool_call>\n<function=search>\n<parameter=query>\ngo\n<parameter=page>\n2\n</parameter>\n</function>\n</tool_call>",
		want: []wantTextCall{{"search", `{"query":"go","page":2}`, "qwen3-coder-xml"}}},
	{name: "qwen3-coder-indented", give: "<tool_call>\n  <function=search>\n    <parameter=query>\n      hello world\n    </parameter>\n  </function>\n</tool_call>",
		want: []wantTextCall{{"search", `{"query":"hello world"}`, "qwen3-coder-xml"}}},
	{name: "qwen3-coder-indented-code", give: "<tool_call>\n<function=search>\n  <parameter=query>\n    def f():\n        return 1\n  </parameter>\n</function>\n</tool_call>",
		want: []wantTextCall{{"search", `{"query":"def f():\n    return 1"}`, "qwen3-coder-xml"}}},
	{name: "qwen3-coder-code-keeps-indentation", give: "<tool_call>\n<function=search>\n<parameter=query>\n    x = 1\n</parameter>\n</function>\n</tool_call>",
		want: []wantTextCall{{"search", `{"query":"    x = 1"}`, "qwen3-coder-xml"}}},
	{name: "qwen3-coder-arrow", give: "<tool_call>\n<function=search>\n<parameter=query>\nf(x) -> y\n</parameter>\n</function>\n</tool_call>",
		want: []wantTextCall{{"search", `{"query":"f(x) -> y"}`, "qwen3-coder-xml"}}},
	{name: "qwen3-coder-in-code-block", give: "```\n<function=search>\n<parameter=query>\ngo\n</parameter>\n</function>\n```"},
	{name: "qwen3-coder-duplicate-parameter", give: "<tool_call>\n<function=search>\n<parameter=query>\na\n</parameter>\n<parameter=query>\nb\n</parameter>\n</function>\n</tool_call>"},
	{name: "qwen3-coder-no-name", give: "<tool_call>\n<function=>\n</function>\n</tool_call>"},
	{name: "qwen3-coder-example", give: "The syntax is:\n<tool_call>\n<function=search>\n<parameter=query>\ngo\n</parameter>\n</function>\n</tool_call>"},

	// GLM without its <tool_call> opener (a special token the stack
	// dropped): the name must be a declared tool's, at the content's start.
	{name: "glm-no-opener", give: "get_weather\n<arg_key>city</arg_key>\n<arg_value>Beijing</arg_value>\n</tool_call>",
		want: []wantTextCall{{"get_weather", `{"city":"Beijing"}`, "glm"}}},
	{name: "glm-no-opener-no-closer", give: "search<arg_key>query</arg_key><arg_value>go</arg_value>",
		want: []wantTextCall{{"search", `{"query":"go"}`, "glm"}}},
	{name: "glm-no-opener-then-second", give: "get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>\n<tool_call>get_time\n</tool_call>",
		want: []wantTextCall{{"get_weather", `{"city":"Paris"}`, "glm"}, {"get_time", `{}`, "glm"}}},
	{name: "glm-no-opener-undeclared", give: "launch\n<arg_key>x</arg_key><arg_value>1</arg_value></tool_call>"},
	{name: "glm-no-opener-after-prose", give: "I will call get_weather\n<arg_key>city</arg_key><arg_value>x</arg_value>"},
	{name: "glm-in-think", give: "<think>get_weather<arg_key>city</arg_key><arg_value>x</arg_value></think>Done."},
	{name: "glm-no-opener-cut-off", give: "get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris", held: true},
	{name: "glm-undeclared-marked", give: "<tool_call>launch\n<arg_key>now</arg_key>\n<arg_value>true</arg_value>\n</tool_call>",
		want: []wantTextCall{{"launch", `{"now":true}`, "glm"}}},

	// DeepSeek V3/V3.1 with the arguments fenced or not.
	{name: "deepseek-v31-fenced", give: dsOpen + "get_weather" + dsSep + "```json\n{\"city\": \"Tokyo\"}\n```" + dsClose,
		want: []wantTextCall{{"get_weather", `{"city": "Tokyo"}`, "deepseek"}}},
	{name: "deepseek-v3-plain-fence", give: dsOpen + "function" + dsSep + "get_weather\n```\n{\"city\": \"Tokyo\"}\n```" + dsClose,
		want: []wantTextCall{{"get_weather", `{"city": "Tokyo"}`, "deepseek"}}},
	{name: "deepseek-v3-no-fence", give: dsOpen + "function" + dsSep + "get_weather\n{\"city\": \"Tokyo\"}" + dsClose,
		want: []wantTextCall{{"get_weather", `{"city": "Tokyo"}`, "deepseek"}}},
	{name: "deepseek-malformed", give: dsOpen + "search" + dsSep + `{"query": "go"` + dsClose,
		want: []wantTextCall{{"search", `"{\"query\": \"go\""`, "deepseek unread"}}},
	{name: "deepseek-python-fence", give: dsOpen + "function" + dsSep + "search\n```python\nsearch('go')\n```" + dsClose,
		want: []wantTextCall{{"search", "\"```python\\nsearch('go')\\n```\"", "deepseek unread"}}},
	{name: "deepseek-in-code", give: "```\n" + dsOpen + "search" + dsSep + `{"query": "go"}` + dsClose + "\n```"},

	// Llama JSON (and lists) on lines of their own between prose.
	{name: "llama3-prose-around", give: "Here is the result:\n{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}\nWould you like to know more?",
		want: []wantTextCall{{"get_weather", `{"city": "Paris"}`, "llama3-json prose"}}, content: "Here is the result:\nWould you like to know more?"},
	{name: "llama3-prose-list", give: "Doing both:\n[{\"name\": \"get_time\", \"arguments\": {}}]\n",
		want: []wantTextCall{{"get_time", `{}`, "json-list prose"}}, content: "Doing both:"},
	{name: "llama3-prose-example", give: "The format is:\n{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}\n"},
	{name: "llama3-prose-undeclared", give: "Here:\n{\"name\": \"launch\", \"parameters\": {}}\n"},
	{name: "llama3-prose-marked-only", give: "Here is the result:\n{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}\n", formats: &TextFormats{Marked: true}},
	{name: "llama3-prose-not-a-call", give: "Result:\n{\"city\": \"Paris\"}\nDone."},
	{name: "llama3-prose-then-example", give: "Call it so:\n{\"name\": \"get_time\", \"parameters\": {}}\nThat is what a call looks like."},
	{name: "llama3-prose-markdown-link", give: "See:\n[the docs](https://example.com)\nfor more."},

	// Mistral: a list with one call that cannot be read.
	{name: "mistral-list-one-malformed", give: `[TOOL_CALLS][{"name": "search", "arguments": {"query": "go"}}, {"name": "click", "arguments": [1]}]`,
		want: []wantTextCall{{"search", `{"query": "go"}`, "mistral"}, {"click", `"{\"name\": \"click\", \"arguments\": [1]}"`, "mistral unread"}}},
	{name: "mistral-in-code", give: "Write `[TOOL_CALLS][{\"name\": \"search\", \"arguments\": {}}]` to call."},
	{name: "mistral-example", give: "For instance:\n[TOOL_CALLS][{\"name\": \"search\", \"arguments\": {}}]"},

	// OpenAI harmony (gpt-oss).
	{name: "harmony-call", give: "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\"}<|call|>",
		want: []wantTextCall{{"get_weather", `{"city":"Paris"}`, "harmony"}}},
	{name: "harmony-recipient-in-role", give: "<|start|>assistant to=functions.search<|channel|>commentary json<|message|>{\"query\":\"go\"}<|call|>",
		want: []wantTextCall{{"search", `{"query":"go"}`, "harmony"}}},
	{name: "harmony-after-analysis", give: "<|channel|>analysis<|message|>Need to use function get_weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"SF\"}<|call|>",
		want: []wantTextCall{{"get_weather", `{"city":"SF"}`, "harmony"}}, content: "<|channel|>analysis<|message|>Need to use function get_weather.<|end|>"},
	{name: "harmony-preamble", give: "<|channel|>commentary<|message|>Checking the weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather<|constrain|>json<|message|>{\"city\":\"Oslo\"}<|call|>",
		want: []wantTextCall{{"get_weather", `{"city":"Oslo"}`, "harmony"}}, content: "<|channel|>commentary<|message|>Checking the weather.<|end|>"},
	{name: "harmony-unclosed-last", give: "<|channel|>commentary to=functions.get_time <|constrain|>json<|message|>{}",
		want: []wantTextCall{{"get_time", `{}`, "harmony"}}},
	{name: "harmony-two", give: "<|channel|>commentary to=functions.get_time<|message|>{}<|call|><|start|>assistant<|channel|>commentary to=functions.click<|message|>{\"selector\":\"#go\"}<|call|>",
		want: []wantTextCall{{"get_time", `{}`, "harmony"}, {"click", `{"selector":"#go"}`, "harmony"}}},
	{name: "harmony-undeclared", give: "<|channel|>commentary to=functions.launch <|constrain|>json<|message|>{}<|call|>",
		want: []wantTextCall{{"launch", `{}`, "harmony"}}},
	{name: "harmony-malformed", give: "<|channel|>commentary to=functions.search <|constrain|>json<|message|>{\"query\": \"go\"<|call|>",
		want: []wantTextCall{{"search", `"{\"query\": \"go\""`, "harmony unread"}}},
	{name: "harmony-final-only", give: "<|channel|>final<|message|>The weather is mild.<|return|>"},
	{name: "harmony-analysis-only", give: "<|channel|>analysis<|message|>Thinking about it.<|end|>"},
	{name: "harmony-in-code", give: "Harmony calls look so:\n```\n<|channel|>commentary to=functions.search<|message|>{}<|call|>\n```"},
	{name: "harmony-cut-off", give: "<|channel|>commentary to=functions.search <|constrain|>json<|message|>{\"query\": \"g", held: true},
	{name: "harmony-example", give: "For example:\n<|channel|>commentary to=functions.search<|message|>{}<|call|>"},

	// Kimi K2.
	{name: "kimi-k2", give: kOpen + "functions.get_weather:0" + kArgBegin + `{"city": "Paris"}` + kClose,
		want: []wantTextCall{{"get_weather", `{"city": "Paris"}`, "kimi-k2"}}},
	{name: "kimi-k2-newlines", give: kSectionBegin + "\n" + kCallBegin + "\nfunctions.get_weather:0" + kArgBegin + "\n{\"city\": \"Tokyo\"}\n" + kCallEnd + "\n" + kSectionEnd,
		want: []wantTextCall{{"get_weather", `{"city": "Tokyo"}`, "kimi-k2"}}},
	{name: "kimi-k2-two", give: kOpen + "functions.get_time:0" + kArgBegin + `{}` + kCallEnd + kCallBegin + "functions.click:1" + kArgBegin + `{"selector": "#go"}` + kClose,
		want: []wantTextCall{{"get_time", `{}`, "kimi-k2"}, {"click", `{"selector": "#go"}`, "kimi-k2"}}},
	{name: "kimi-k2-no-section", give: kCallBegin + "functions.search:0" + kArgBegin + `{"query": "go"}` + kCallEnd,
		want: []wantTextCall{{"search", `{"query": "go"}`, "kimi-k2"}}},
	{name: "kimi-k2-plain-name", give: kOpen + "get_time:0" + kArgBegin + `{}` + kClose,
		want: []wantTextCall{{"get_time", `{}`, "kimi-k2"}}},
	{name: "kimi-k2-prose-before", give: "Let me check.\n" + kOpen + "functions.get_time:0" + kArgBegin + `{}` + kClose,
		want: []wantTextCall{{"get_time", `{}`, "kimi-k2"}}, content: "Let me check."},
	{name: "kimi-k2-undeclared", give: kOpen + "functions.launch:0" + kArgBegin + `{}` + kClose,
		want: []wantTextCall{{"launch", `{}`, "kimi-k2"}}},
	{name: "kimi-k2-one-malformed", give: kOpen + "functions.get_time:0" + kArgBegin + `{}` + kCallEnd + kCallBegin + "functions.search:1" + kArgBegin + `{"query": "go"` + kClose,
		want: []wantTextCall{{"get_time", `{}`, "kimi-k2"}, {"search", `"{\"query\": \"go\""`, "kimi-k2 unread"}}},
	{name: "kimi-k2-in-code", give: "Calls are written `" + kOpen + "functions.search:0" + kArgBegin + `{}` + kClose + "` by the model."},
	{name: "kimi-k2-cut-off", give: kOpen + "functions.search:0" + kArgBegin + `{"query": "go"}`, held: true},
	{name: "kimi-k2-empty-section", give: kSectionBegin + kSectionEnd},
	{name: "kimi-k2-example", give: "For example:\n" + kOpen + "functions.search:0" + kArgBegin + `{}` + kClose},
	{name: "kimi-k2-in-think", give: "<think>" + kOpen + "functions.search:0" + kArgBegin + `{}` + kClose + "</think>No call needed."},

	// Granite 3: a JSON list after <|tool_call|>.
	{name: "granite", give: `<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]`,
		want: []wantTextCall{{"get_weather", `{"city": "Paris"}`, "granite"}}},
	{name: "granite-two", give: `<|tool_call|>[{"name": "get_time", "arguments": {}}, {"name": "click", "arguments": {"selector": "#go"}}]`,
		want: []wantTextCall{{"get_time", `{}`, "granite"}, {"click", `{"selector": "#go"}`, "granite"}}},
	{name: "granite-prose-before", give: "Let me check.<|tool_call|>[{\"name\": \"get_time\", \"arguments\": {}}]",
		want: []wantTextCall{{"get_time", `{}`, "granite"}}, content: "Let me check."},
	{name: "granite-undeclared", give: `<|tool_call|>[{"name": "launch", "arguments": {}}]`,
		want: []wantTextCall{{"launch", `{}`, "granite"}}},
	{name: "granite-string-arguments", give: `<|tool_call|>[{"name": "search", "arguments": "go"}]`,
		want: []wantTextCall{{"search", `"go"`, "granite"}}},
	{name: "granite-one-malformed", give: `<|tool_call|>[{"name": "get_time", "arguments": {}}, {"name": "search", "arguments": [1]}]`,
		want: []wantTextCall{{"get_time", `{}`, "granite"}, {"search", `"{\"name\": \"search\", \"arguments\": [1]}"`, "granite unread"}}},
	{name: "granite-in-code", give: "Granite writes `<|tool_call|>[{\"name\": \"search\", \"arguments\": {}}]` for calls."},
	{name: "granite-example", give: "For example: <|tool_call|>[{\"name\": \"search\", \"arguments\": {}}]"},
	{name: "granite-cut-off", give: `<|tool_call|>[{"name": "search", "arguments": {"query": "go"}`, held: true},
	{name: "granite-not-a-list", give: `<|tool_call|>{"name": "search", "arguments": {}}`, held: true},
	{name: "granite-in-think", give: "<think><|tool_call|>[{\"name\": \"search\", \"arguments\": {}}]</think>No call."},

	// Hunyuan: a JSON list in <tool_calls>.
	{name: "hunyuan", give: `<tool_calls>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</tool_calls>`,
		want: []wantTextCall{{"get_weather", `{"city": "Paris"}`, "hunyuan"}}},
	{name: "hunyuan-newlines", give: "<tool_calls>\n[{\"name\": \"get_time\", \"arguments\": {}}]\n</tool_calls>",
		want: []wantTextCall{{"get_time", `{}`, "hunyuan"}}},
	{name: "hunyuan-two", give: `<tool_calls>[{"name": "get_time", "arguments": {}}, {"name": "click", "arguments": {"selector": "#go"}}]</tool_calls>`,
		want: []wantTextCall{{"get_time", `{}`, "hunyuan"}, {"click", `{"selector": "#go"}`, "hunyuan"}}},
	{name: "hunyuan-unclosed-at-end", give: `<tool_calls>[{"name": "get_time", "arguments": {}}]`,
		want: []wantTextCall{{"get_time", `{}`, "hunyuan"}}},
	{name: "hunyuan-prose-around", give: "Calling.\n<tool_calls>[{\"name\": \"get_time\", \"arguments\": {}}]</tool_calls>\nDone.",
		want: []wantTextCall{{"get_time", `{}`, "hunyuan"}}, content: "Calling.\nDone."},
	{name: "hunyuan-one-malformed", give: `<tool_calls>[{"name": "get_time", "arguments": {}}, {"name": "search", "arguments": 5}]</tool_calls>`,
		want: []wantTextCall{{"get_time", `{}`, "hunyuan"}, {"search", `"{\"name\": \"search\", \"arguments\": 5}"`, "hunyuan unread"}}},
	{name: "hunyuan-prose-inside", give: `<tool_calls>[{"name": "get_time", "arguments": {}}] and more</tool_calls>`},
	{name: "hunyuan-in-code-block", give: "```\n<tool_calls>[{\"name\": \"get_time\", \"arguments\": {}}]</tool_calls>\n```"},
	{name: "hunyuan-example", give: "Such as:\n<tool_calls>[{\"name\": \"get_time\", \"arguments\": {}}]</tool_calls>"},
	{name: "hunyuan-cut-off", give: `<tool_calls>[{"name": "get_time", "arguments": {`, held: true},
	{name: "hunyuan-in-think", give: "<think><tool_calls>[{\"name\": \"get_time\", \"arguments\": {}}]</tool_calls></think>No call."},

	// Phi-4-mini: "functools" and a JSON list, no closing marker; a word,
	// so read only where the content starts.
	{name: "phi4", give: `functools[{"name": "get_weather", "arguments": {"city": "Paris"}}]`,
		want: []wantTextCall{{"get_weather", `{"city": "Paris"}`, "phi4"}}},
	{name: "phi4-two", give: `functools[{"name": "get_time", "arguments": {}}, {"name": "click", "arguments": {"selector": "#go"}}]`,
		want: []wantTextCall{{"get_time", `{}`, "phi4"}, {"click", `{"selector": "#go"}`, "phi4"}}},
	{name: "phi4-leading-space", give: "\n functools[{\"name\": \"get_time\", \"arguments\": {}}]",
		want: []wantTextCall{{"get_time", `{}`, "phi4"}}},
	{name: "phi4-text-after", give: "functools[{\"name\": \"get_time\", \"arguments\": {}}]\nDone.",
		want: []wantTextCall{{"get_time", `{}`, "phi4"}}, content: "Done."},
	{name: "phi4-undeclared", give: `functools[{"name": "launch", "arguments": {}}]`,
		want: []wantTextCall{{"launch", `{}`, "phi4"}}},
	{name: "phi4-one-malformed", give: `functools[{"name": "get_time", "arguments": {}}, {"name": "search", "arguments": [1]}]`,
		want: []wantTextCall{{"get_time", `{}`, "phi4"}, {"search", `"{\"name\": \"search\", \"arguments\": [1]}"`, "phi4 unread"}}},
	{name: "phi4-after-prose", give: "Sure, functools[{\"name\": \"get_time\", \"arguments\": {}}]"},
	{name: "phi4-in-think", give: "<think>functools[{\"name\": \"get_time\", \"arguments\": {}}]</think>No call."},
	{name: "phi4-cut-off", give: `functools[{"name": "get_time", "arguments": {`, held: true},
	{name: "phi4-not-a-list", give: `functools{"name": "get_time", "arguments": {}}`},
	{name: "phi4-word", give: "functools is a module of Python's standard library."},

	// A fenced JSON call: the content's only code block, ending it.
	{name: "fenced-json-list-of-one", give: "Checking:\n```json\n{\"name\": \"get_time\", \"arguments\": {}}\n```",
		want: []wantTextCall{{"get_time", `{}`, "fenced-json"}}, content: "Checking:"},
	{name: "fenced-json-undeclared", give: "```json\n{\"name\": \"launch\", \"arguments\": {}}\n```", held: true},
	{name: "fenced-json-two-blocks", give: "```json\n{\"name\": \"get_time\", \"arguments\": {}}\n```\nor\n```json\n{\"name\": \"search\", \"arguments\": {}}\n```"},
	{name: "fenced-json-not-a-call", give: "```json\n{\"city\": \"Paris\"}\n```", held: true},
	{name: "fenced-json-unclosed", give: "```json\n{\"name\": \"get_time\", \"arguments\": {}}", held: true},
}

func init() {
	textCallCases = append(textCallCases, textCorpus...)
}

// corpusFamilies are the formats the corpus covers, by the prefix of their
// cases' names.
var corpusFamilies = []string{"hermes", "qwen3-coder", "glm", "mistral", "llama3", "pythonic", "deepseek", "harmony", "kimi-k2", "granite", "hunyuan", "phi4", "fenced", "react"}

// TestTextCallsCorpusSize keeps at least 10 cases per format, positives
// and negatives both.
func TestTextCallsCorpusSize(t *testing.T) {
	for _, fam := range corpusFamilies {
		pos, neg := 0, 0
		for _, tt := range textCallCases {
			if !strings.HasPrefix(tt.name, fam) {
				continue
			}
			if tt.want != nil {
				pos++
			} else {
				neg++
			}
		}
		if pos+neg < 10 || pos == 0 || neg == 0 {
			t.Errorf("%s: %d positives and %d negatives, want 10 cases with both", fam, pos, neg)
		}
	}
}
