package repair

// The corpus of the formats read by textinvoke.go, and of models whose calls
// an existing reader reads (Jamba and Apriel write Hunyuan's list, xLAM a
// bare list), by family: positives, negatives and malformed calls.

func mm(body string) string { return mmOpen + "\n" + body + "\n" + mmClose }

func mmInvoke(name, params string) string {
	return `<invoke name="` + name + `">` + "\n" + params + "\n</invoke>"
}

func dsml(bar, body string) string {
	return "<" + bar + "function_calls>\n" + body + "\n</" + bar + "function_calls>"
}

func dsmlInvoke(bar, name, params string) string {
	return "<" + bar + `invoke name="` + name + `">` + "\n" + params + "\n</" + bar + "invoke>"
}

func dsmlParam(bar, key, str, value string) string {
	return "<" + bar + `parameter name="` + key + `" string="` + str + `">` + value + "</" + bar + "parameter>"
}

func seedCall(name, params string) string {
	return seedOpen + "\n<function=" + name + ">\n" + params + "\n</function>\n" + seedClose
}

func intern(obj string) string { return internOpen + "\n" + obj + internClose }

func cohere(list string) string { return cohereOpen + list + cohereClose }

func gemma(name, obj string) string { return gemmaOpen + name + obj + gemmaClose }

func gq(s string) string { return gemmaQuote + s + gemmaQuote }

func toolCallsList(list string) string { return "<tool_calls>" + list + "</tool_calls>" }

var (
	dsw = dsmlWide
	dsa = dsmlASCII
)

var textCorpus2 = []textCallCase{
	// MiniMax M2: <minimax:tool_call> and <invoke> tags.
	{name: "minimax-m2", give: mm(mmInvoke("get_weather", `<parameter name="city">Paris</parameter>`)),
		want: []wantTextCall{{"get_weather", `{"city":"Paris"}`, "minimax-m2"}}},
	{name: "minimax-m2-two", give: mm(mmInvoke("get_time", "") + "\n" + mmInvoke("click", `<parameter name="selector">#go</parameter>`)),
		want: []wantTextCall{{"get_time", `{}`, "minimax-m2"}, {"click", `{"selector":"#go"}`, "minimax-m2"}}},
	{name: "minimax-m2-two-after-prose", give: "Now:\n" + mm(mmInvoke("get_time", "")+"\n"+mmInvoke("get_time", "")),
		want: []wantTextCall{{"get_time", `{}`, "minimax-m2"}, {"get_time", `{}`, "minimax-m2"}}, content: "Now:"},
	{name: "minimax-m2-typed", give: mm(mmInvoke("search", `<parameter name="query">go</parameter>`+"\n"+`<parameter name="page">2</parameter>`+"\n"+`<parameter name="filter">{"lang": "en"}</parameter>`)),
		want: []wantTextCall{{"search", `{"query":"go","page":2,"filter":{"lang":"en"}}`, "minimax-m2"}}},
	{name: "minimax-m2-prose-before", give: "Let me check.\n" + mm(mmInvoke("get_time", "")),
		want: []wantTextCall{{"get_time", `{}`, "minimax-m2"}}, content: "Let me check."},
	{name: "minimax-m2-in-think", give: "<think>I should call a tool.</think>\n" + mm(mmInvoke("get_time", "")),
		want: []wantTextCall{{"get_time", `{}`, "minimax-m2"}}, content: "<think>I should call a tool.</think>"},
	{name: "minimax-m2-undeclared", give: mm(mmInvoke("launch", `<parameter name="now">true</parameter>`)),
		want: []wantTextCall{{"launch", `{"now":true}`, "minimax-m2"}}},
	{name: "minimax-m2-unclosed-parameter", give: mm(mmInvoke("search", `<parameter name="query">go`)),
		want: []wantTextCall{{"search", `"<parameter name=\"query\">go"`, "minimax-m2 unread"}}},
	{name: "minimax-m2-in-code", give: "The model writes `" + mm(mmInvoke("get_time", "")) + "` to call."},
	{name: "minimax-m2-cut-off", give: mmOpen + "\n" + `<invoke name="search">` + "\n" + `<parameter name="query">go`, held: true},
	{name: "minimax-m2-example", give: "For example:\n" + mm(mmInvoke("get_time", ""))},
	{name: "minimax-m2-empty", give: mmOpen + mmClose},
	{name: "minimax-m2-prose-inside", give: mm("I would call get_time here.")},

	// DeepSeek V3.2's DSML.
	{name: "deepseek-v3.2", give: dsml(dsw, dsmlInvoke(dsw, "get_weather", dsmlParam(dsw, "city", "true", "Paris"))),
		want: []wantTextCall{{"get_weather", `{"city":"Paris"}`, "deepseek-v3.2"}}},
	{name: "deepseek-v3.2-json-value", give: dsml(dsw, dsmlInvoke(dsw, "search", dsmlParam(dsw, "query", "true", "go")+"\n"+dsmlParam(dsw, "page", "false", "2"))),
		want: []wantTextCall{{"search", `{"query":"go","page":2}`, "deepseek-v3.2"}}},
	{name: "deepseek-v3.2-string-number", give: dsml(dsw, dsmlInvoke(dsw, "search", dsmlParam(dsw, "query", "true", "42"))),
		want: []wantTextCall{{"search", `{"query":"42"}`, "deepseek-v3.2"}}},
	{name: "deepseek-v3.2-ascii-bars", give: dsml(dsa, dsmlInvoke(dsa, "get_time", "")),
		want: []wantTextCall{{"get_time", `{}`, "deepseek-v3.2"}}},
	{name: "deepseek-v3.2-two", give: dsml(dsw, dsmlInvoke(dsw, "get_time", "")+"\n"+dsmlInvoke(dsw, "click", dsmlParam(dsw, "selector", "true", "#go"))),
		want: []wantTextCall{{"get_time", `{}`, "deepseek-v3.2"}, {"click", `{"selector":"#go"}`, "deepseek-v3.2"}}},
	{name: "deepseek-v3.2-prose-before", give: "Searching now.\n\n" + dsml(dsw, dsmlInvoke(dsw, "get_time", "")),
		want: []wantTextCall{{"get_time", `{}`, "deepseek-v3.2"}}, content: "Searching now."},
	{name: "deepseek-v3.2-bad-json", give: dsml(dsw, dsmlInvoke(dsw, "search", dsmlParam(dsw, "page", "false", "two"))),
		want: []wantTextCall{{"search", `"<｜DSML｜parameter name=\"page\" string=\"false\">two</｜DSML｜parameter>"`, "deepseek-v3.2 unread"}}},
	{name: "deepseek-v3.2-undeclared", give: dsml(dsw, dsmlInvoke(dsw, "launch", "")),
		want: []wantTextCall{{"launch", `{}`, "deepseek-v3.2"}}},
	{name: "deepseek-v3.2-v4-wrapper", give: "<" + dsw + "tool_calls>\n" + dsmlInvoke(dsw, "get_time", "") + "\n</" + dsw + "tool_calls>",
		want: []wantTextCall{{"get_time", `{}`, "deepseek-v3.2"}}},
	{name: "deepseek-v3.2-in-code", give: "It writes `" + dsml(dsw, dsmlInvoke(dsw, "get_time", "")) + "`."},
	{name: "deepseek-v3.2-cut-off", give: "<" + dsw + "function_calls>\n<" + dsw + `invoke name="search">`, held: true},
	{name: "deepseek-v3.2-example", give: "For example:\n" + dsml(dsw, dsmlInvoke(dsw, "get_time", ""))},

	// Seed-OSS: Qwen3-Coder's XML in <seed:tool_call>.
	{name: "seed-oss", give: seedCall("get_weather", "<parameter=city>\nParis\n</parameter>"),
		want: []wantTextCall{{"get_weather", `{"city":"Paris"}`, "seed-oss"}}},
	{name: "seed-oss-typed", give: seedCall("search", "<parameter=query>\ngo\n</parameter>\n<parameter=page>\n2\n</parameter>"),
		want: []wantTextCall{{"search", `{"query":"go","page":2}`, "seed-oss"}}},
	{name: "seed-oss-two", give: seedCall("get_time", "") + "\n" + seedCall("click", "<parameter=selector>\n#go\n</parameter>"),
		want: []wantTextCall{{"get_time", `{}`, "seed-oss"}, {"click", `{"selector":"#go"}`, "seed-oss"}}},
	{name: "seed-oss-prose-before", give: "I'll look it up.\n" + seedCall("get_time", ""),
		want: []wantTextCall{{"get_time", `{}`, "seed-oss"}}, content: "I'll look it up."},
	{name: "seed-oss-undeclared", give: seedCall("launch", ""),
		want: []wantTextCall{{"launch", `{}`, "seed-oss"}}},
	{name: "seed-oss-in-code", give: "Call with `" + seedCall("get_time", "") + "`."},
	// Left open at the end of the text, as Qwen3-Coder's XML is read.
	{name: "seed-oss-left-open", give: seedOpen + "\n<function=search>\n<parameter=query>\ngo",
		want: []wantTextCall{{"search", `{"query":"go"}`, "seed-oss"}}},
	{name: "seed-oss-cut-off", give: seedOpen + "\n<function=sea", held: true},
	{name: "seed-oss-example", give: "For example:\n" + seedCall("get_time", "")},
	{name: "seed-oss-prose-inside", give: seedOpen + "no call after all" + seedClose},
	{name: "seed-oss-two-params-same", give: seedCall("search", "<parameter=query>\na\n</parameter>\n<parameter=query>\nb\n</parameter>")},

	// InternLM2's plugin action.
	{name: "internlm2", give: intern(`{"name": "get_weather", "parameters": {"city": "Paris"}}`),
		want: []wantTextCall{{"get_weather", `{"city": "Paris"}`, "internlm2"}}},
	{name: "internlm2-arguments-key", give: intern(`{"name": "search", "arguments": {"query": "go"}}`),
		want: []wantTextCall{{"search", `{"query": "go"}`, "internlm2"}}},
	{name: "internlm2-prose-before", give: "I need the weather first." + intern(`{"name": "get_weather", "parameters": {"city": "Paris"}}`),
		want: []wantTextCall{{"get_weather", `{"city": "Paris"}`, "internlm2"}}, content: "I need the weather first."},
	{name: "internlm2-undeclared", give: intern(`{"name": "launch", "parameters": {}}`),
		want: []wantTextCall{{"launch", `{}`, "internlm2"}}},
	{name: "internlm2-malformed", give: intern(`{"name": "search", "parameters": {"query": }`),
		want: []wantTextCall{{"search", `"{\"name\": \"search\", \"parameters\": {\"query\": }"`, "internlm2 unread"}}},
	{name: "internlm2-interpreter", give: "<|action_start|><|interpreter|>\nprint(2 + 2)<|action_end|>"},
	{name: "internlm2-in-code", give: "Actions look like `" + intern(`{"name": "search", "parameters": {}}`) + "`."},
	{name: "internlm2-cut-off", give: internOpen + "\n" + `{"name": "search", "parameters": {"query": "go"`, held: true},
	{name: "internlm2-example", give: "For example:\n" + intern(`{"name": "search", "parameters": {}}`)},
	{name: "internlm2-plain", give: "The plugin action runs the search tool when you ask for it."},

	// Command R7B's action list.
	{name: "command-r7b", give: cohere(`[{"tool_call_id": "0", "tool_name": "get_weather", "parameters": {"city": "Paris"}}]`),
		want: []wantTextCall{{"get_weather", `{"city": "Paris"}`, "command-r7b"}}},
	{name: "command-r7b-two", give: cohere(`[{"tool_call_id": "0", "tool_name": "get_time", "parameters": {}}, {"tool_call_id": "1", "tool_name": "click", "parameters": {"selector": "#go"}}]`),
		want: []wantTextCall{{"get_time", `{}`, "command-r7b"}, {"click", `{"selector": "#go"}`, "command-r7b"}}},
	{name: "command-r7b-two-after-prose", give: "Both:\n" + cohere(`[{"tool_name": "get_time"}, {"tool_name": "get_time"}]`),
		want: []wantTextCall{{"get_time", `{}`, "command-r7b"}, {"get_time", `{}`, "command-r7b"}}, content: "Both:"},
	{name: "command-r7b-no-parameters", give: cohere(`[{"tool_call_id": "0", "tool_name": "get_time"}]`),
		want: []wantTextCall{{"get_time", `{}`, "command-r7b"}}},
	{name: "command-r7b-prose-before", give: "I will search for it.\n" + cohere(`[{"tool_call_id": "0", "tool_name": "search", "parameters": {"query": "go"}}]`),
		want: []wantTextCall{{"search", `{"query": "go"}`, "command-r7b"}}, content: "I will search for it."},
	{name: "command-r7b-undeclared", give: cohere(`[{"tool_call_id": "0", "tool_name": "launch", "parameters": {}}]`),
		want: []wantTextCall{{"launch", `{}`, "command-r7b"}}},
	{name: "command-r7b-string-parameters", give: cohere(`[{"tool_call_id": "0", "tool_name": "search", "parameters": "go"}]`),
		want: []wantTextCall{{"search", `"{\"tool_call_id\": \"0\", \"tool_name\": \"search\", \"parameters\": \"go\"}"`, "command-r7b unread"}}},
	{name: "command-r7b-not-a-list", give: cohere(`{"tool_call_id": "0", "tool_name": "search", "parameters": {}}`)},
	{name: "command-r7b-in-code", give: "It writes `" + cohere(`[{"tool_name": "get_time"}]`) + "`."},
	{name: "command-r7b-cut-off", give: cohereOpen + `[{"tool_call_id": "0", "tool_name": "search", "parameters": {"query": "go"`, held: true},
	{name: "command-r7b-example", give: "For example:\n" + cohere(`[{"tool_call_id": "0", "tool_name": "get_time", "parameters": {}}]`)},

	// Hunyuan V4: <tool_call> blocks of GLM's pairs in <tool_calls>.
	{name: "hunyuan-v4", give: "<tool_calls>\n<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>\n</tool_calls>",
		want: []wantTextCall{{"get_weather", `{"city":"Paris"}`, "hunyuan-v4"}}},
	{name: "hunyuan-v4-two", give: "<tool_calls><tool_call>get_time</tool_call><tool_call>click<arg_key>selector</arg_key><arg_value>#go</arg_value></tool_call></tool_calls>",
		want: []wantTextCall{{"get_time", `{}`, "hunyuan-v4"}, {"click", `{"selector":"#go"}`, "hunyuan-v4"}}},
	{name: "hunyuan-v4-two-after-prose", give: "Both:\n<tool_calls><tool_call>get_time</tool_call><tool_call>get_time</tool_call></tool_calls>",
		want: []wantTextCall{{"get_time", `{}`, "hunyuan-v4"}, {"get_time", `{}`, "hunyuan-v4"}}, content: "Both:"},
	{name: "hunyuan-v4-typed", give: "<tool_calls><tool_call>search<arg_key>query</arg_key><arg_value>go</arg_value><arg_key>page</arg_key><arg_value>2</arg_value></tool_call></tool_calls>",
		want: []wantTextCall{{"search", `{"query":"go","page":2}`, "hunyuan-v4"}}},
	{name: "hunyuan-v4-prose-before", give: "Let me check.\n<tool_calls><tool_call>get_time</tool_call></tool_calls>",
		want: []wantTextCall{{"get_time", `{}`, "hunyuan-v4"}}, content: "Let me check."},
	{name: "hunyuan-v4-undeclared", give: "<tool_calls><tool_call>launch</tool_call></tool_calls>",
		want: []wantTextCall{{"launch", `{}`, "hunyuan-v4"}}},
	{name: "hunyuan-v4-missing-value", give: "<tool_calls><tool_call>search<arg_key>query</arg_key></tool_call></tool_calls>",
		want: []wantTextCall{{"search", `"search<arg_key>query</arg_key>"`, "hunyuan-v4 unread"}}},
	{name: "hunyuan-v4-in-code", give: "It writes `<tool_calls><tool_call>get_time</tool_call></tool_calls>`."},
	{name: "hunyuan-v4-cut-off", give: "<tool_calls><tool_call>search<arg_key>query</arg_key><arg_value>go", held: true},
	{name: "hunyuan-v4-example", give: "For example:\n<tool_calls><tool_call>get_time</tool_call></tool_calls>"},
	{name: "hunyuan-v4-prose-inside", give: "<tool_calls>none needed</tool_calls>"},

	// Command R: "Action: " and a json code block.
	{name: "command-r", give: "Action: ```json\n[\n    {\n        \"tool_name\": \"get_weather\",\n        \"parameters\": {\"city\": \"Paris\"}\n    }\n]\n```",
		want: []wantTextCall{{"get_weather", `{"city": "Paris"}`, "command-r"}}},
	{name: "command-r-two", give: "Action: ```json\n[{\"tool_name\": \"get_time\", \"parameters\": {}}, {\"tool_name\": \"search\", \"parameters\": {\"query\": \"go\"}}]\n```",
		want: []wantTextCall{{"get_time", `{}`, "command-r"}, {"search", `{"query": "go"}`, "command-r"}}},
	{name: "command-r-plan-before", give: "Plan: I will look up the weather.\nAction: ```json\n[{\"tool_name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}]\n```",
		want: []wantTextCall{{"get_weather", `{"city": "Paris"}`, "command-r"}}, content: "Plan: I will look up the weather."},
	{name: "command-r-undeclared", give: "Action: ```json\n[{\"tool_name\": \"launch\", \"parameters\": {}}]\n```",
		want: []wantTextCall{{"launch", `{}`, "command-r"}}},
	{name: "command-r-string-parameters", give: "Action: ```json\n[{\"tool_name\": \"search\", \"parameters\": \"go\"}]\n```",
		want: []wantTextCall{{"search", `"{\"tool_name\": \"search\", \"parameters\": \"go\"}"`, "command-r unread"}}},
	{name: "command-r-directly-answer", give: "Action: ```json\n[{\"tool_name\": \"directly_answer\", \"parameters\": {}}]\n```"},
	{name: "command-r-not-a-list", give: "Action: ```json\n{\"tool_name\": \"get_time\"}\n```"},
	{name: "command-r-mid-line", give: "The next Action: ```json\n[{\"tool_name\": \"get_time\", \"parameters\": {}}]\n``` is shown."},
	{name: "command-r-cut-off", give: "Action: ```json\n[{\"tool_name\": \"search\", \"parameters\": {\"query\": \"go\"", held: true},
	{name: "command-r-example", give: "For example:\nAction: ```json\n[{\"tool_name\": \"get_time\", \"parameters\": {}}]\n```"},
	{name: "command-r-other-language", give: "Action: ```python\nprint(1)\n```"},

	// Functionary v3.2: ">>>NAME" lines and JSON objects, the whole content.
	{name: "functionary", give: ">>>get_weather\n{\"city\": \"Paris\"}",
		want: []wantTextCall{{"get_weather", `{"city": "Paris"}`, "functionary"}}},
	{name: "functionary-two", give: ">>>get_time\n{}\n>>>click\n{\"selector\": \"#go\"}",
		want: []wantTextCall{{"get_time", `{}`, "functionary"}, {"click", `{"selector": "#go"}`, "functionary"}}},
	{name: "functionary-no-newline-between", give: ">>>get_time\n{}>>>search\n{\"query\": \"go\"}",
		want: []wantTextCall{{"get_time", `{}`, "functionary"}, {"search", `{"query": "go"}`, "functionary"}}},
	{name: "functionary-undeclared", give: ">>>launch\n{}",
		want: []wantTextCall{{"launch", `{}`, "functionary"}}},
	{name: "functionary-all", give: ">>>all\nThe weather in Paris is mild."},
	{name: "functionary-all-then-call", give: ">>>all\nLet me check.>>>get_time\n{}"},
	{name: "functionary-not-an-object", give: ">>>search\ngo"},
	{name: "functionary-cut-off", give: ">>>search\n{\"query\": \"go\"", held: true},
	{name: "functionary-mid-text", give: "A quote:\n>>>get_time\n{}"},
	{name: "functionary-trailing-prose", give: ">>>get_time\n{}\nThat is how."},
	{name: "functionary-python-prompt", give: ">>> print(1)\n1"},

	// Gemma 4: call:NAME{...} with <|"|>-delimited strings.
	{name: "gemma4", give: gemma("get_weather", "{city:"+gq("Paris")+"}"),
		want: []wantTextCall{{"get_weather", `{"city":"Paris"}`, "gemma4"}}},
	{name: "gemma4-typed", give: gemma("search", "{query:"+gq("go")+",page:2,exact:true,lang:null}"),
		want: []wantTextCall{{"search", `{"query":"go","page":2,"exact":true,"lang":null}`, "gemma4"}}},
	{name: "gemma4-nested", give: gemma("search", "{filter:{lang:"+gq("en")+",year:2024},tags:["+gq("a")+","+gq("b")+"]}"),
		want: []wantTextCall{{"search", `{"filter":{"lang":"en","year":2024},"tags":["a","b"]}`, "gemma4"}}},
	{name: "gemma4-string-with-syntax", give: gemma("search", "{query:"+gq(`a, b: {c} "d"`)+"}"),
		want: []wantTextCall{{"search", `{"query":"a, b: {c} \"d\""}`, "gemma4"}}},
	{name: "gemma4-two", give: gemma("get_time", "{}") + gemma("click", "{selector:"+gq("#go")+"}"),
		want: []wantTextCall{{"get_time", `{}`, "gemma4"}, {"click", `{"selector":"#go"}`, "gemma4"}}},
	{name: "gemma4-prose-before", give: "Checking.\n" + gemma("get_time", "{}"),
		want: []wantTextCall{{"get_time", `{}`, "gemma4"}}, content: "Checking."},
	{name: "gemma4-undeclared", give: gemma("launch", "{now:true}"),
		want: []wantTextCall{{"launch", `{"now":true}`, "gemma4"}}},
	{name: "gemma4-bare-word", give: gemma("search", "{query:go}"),
		want: []wantTextCall{{"search", `"{query:go}"`, "gemma4 unread"}}},
	{name: "gemma4-in-code", give: "It writes `" + gemma("get_time", "{}") + "`."},
	{name: "gemma4-cut-off", give: gemmaOpen + "search{query:" + gemmaQuote + "go", held: true},
	{name: "gemma4-example", give: "For example:\n" + gemma("get_time", "{}")},

	// Jamba and Apriel write Hunyuan's list in <tool_calls>.
	{name: "jamba", give: toolCallsList(`[{"name": "get_weather", "arguments": {"city": "Paris"}}]`),
		want: []wantTextCall{{"get_weather", `{"city": "Paris"}`, "hunyuan"}}},
	{name: "jamba-two", give: toolCallsList(`[{"name": "get_time", "arguments": {}}, {"name": "search", "arguments": {"query": "go"}}]`),
		want: []wantTextCall{{"get_time", `{}`, "hunyuan"}, {"search", `{"query": "go"}`, "hunyuan"}}},
	{name: "jamba-newlines", give: "<tool_calls>\n[\n  {\"name\": \"get_time\", \"arguments\": {}}\n]\n</tool_calls>",
		want: []wantTextCall{{"get_time", `{}`, "hunyuan"}}},
	{name: "jamba-prose-before", give: "Sure.\n" + toolCallsList(`[{"name": "get_time", "arguments": {}}]`),
		want: []wantTextCall{{"get_time", `{}`, "hunyuan"}}, content: "Sure."},
	{name: "jamba-undeclared", give: toolCallsList(`[{"name": "launch", "arguments": {}}]`),
		want: []wantTextCall{{"launch", `{}`, "hunyuan"}}},
	{name: "jamba-element-not-a-call", give: toolCallsList(`[{"name": "get_time", "arguments": {}}, {"name": "search", "query": "go"}]`),
		want: []wantTextCall{{"get_time", `{}`, "hunyuan"}, {"search", `"{\"name\": \"search\", \"query\": \"go\"}"`, "hunyuan unread"}}},
	{name: "jamba-in-code", give: "Write `" + toolCallsList(`[{"name": "get_time", "arguments": {}}]`) + "` to call."},
	{name: "jamba-cut-off", give: `<tool_calls>[{"name": "search", "arguments": {"query": "go"`, held: true},
	{name: "jamba-example", give: "For example:\n" + toolCallsList(`[{"name": "get_time", "arguments": {}}]`)},
	{name: "jamba-text-after-list", give: `<tool_calls>[{"name": "get_time", "arguments": {}}] and more</tool_calls>`},
	{name: "apriel", give: "[BEGIN FINAL RESPONSE]\n" + toolCallsList(`[{"name": "get_weather", "arguments": {"city": "Paris"}}]`) + "\n[END FINAL RESPONSE]",
		want: []wantTextCall{{"get_weather", `{"city": "Paris"}`, "hunyuan"}}, content: "[BEGIN FINAL RESPONSE]\n[END FINAL RESPONSE]"},
	{name: "apriel-plain", give: toolCallsList(`[{"name": "search", "arguments": {"query": "go"}}]`),
		want: []wantTextCall{{"search", `{"query": "go"}`, "hunyuan"}}},
	{name: "apriel-two", give: toolCallsList(`[{"name": "get_time", "arguments": {}}, {"name": "click", "arguments": {"selector": "#go"}}]`),
		want: []wantTextCall{{"get_time", `{}`, "hunyuan"}, {"click", `{"selector": "#go"}`, "hunyuan"}}},
	{name: "apriel-reasoning-before", give: "Here are my reasoning steps:\nThe user wants the time.\n[BEGIN FINAL RESPONSE]\n" + toolCallsList(`[{"name": "get_time", "arguments": {}}]`),
		want: []wantTextCall{{"get_time", `{}`, "hunyuan"}}, content: "Here are my reasoning steps:\nThe user wants the time.\n[BEGIN FINAL RESPONSE]"},
	{name: "apriel-undeclared", give: toolCallsList(`[{"name": "launch", "arguments": {}}]`),
		want: []wantTextCall{{"launch", `{}`, "hunyuan"}}},
	{name: "apriel-string-arguments", give: toolCallsList(`[{"name": "search", "arguments": "{\"query\": \"go\"}"}]`),
		want: []wantTextCall{{"search", `{"query": "go"}`, "hunyuan"}}},
	{name: "apriel-in-code", give: "Use `" + toolCallsList(`[]`) + "` tags."},
	{name: "apriel-cut-off", give: "[BEGIN FINAL RESPONSE]\n<tool_calls>[{\"name\": \"get_time\"", held: true},
	{name: "apriel-example", give: "For example:\n" + toolCallsList(`[{"name": "get_time", "arguments": {}}]`)},
	{name: "apriel-final-text", give: "[BEGIN FINAL RESPONSE]\nThe time is noon.\n[END FINAL RESPONSE]"},

	// xLAM writes a bare JSON list of calls (read with bare JSON on).
	{name: "xlam", give: `[{"name": "get_weather", "arguments": {"city": "Paris"}}]`,
		want: []wantTextCall{{"get_weather", `{"city": "Paris"}`, "json-list"}}},
	{name: "xlam-two", give: `[{"name": "get_time", "arguments": {}}, {"name": "search", "arguments": {"query": "go"}}]`,
		want: []wantTextCall{{"get_time", `{}`, "json-list"}, {"search", `{"query": "go"}`, "json-list"}}},
	{name: "xlam-newlines", give: "[\n  {\"name\": \"get_time\", \"arguments\": {}}\n]",
		want: []wantTextCall{{"get_time", `{}`, "json-list"}}},
	{name: "xlam-marked-only", give: `[{"name": "get_time", "arguments": {}}]`, formats: &TextFormats{Marked: true}},
	{name: "xlam-undeclared", give: `[{"name": "launch", "arguments": {}}]`, held: true},
	{name: "xlam-tool-calls-object", give: `{"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]}`,
		want: []wantTextCall{{"get_weather", `{"city": "Paris"}`, "json-list"}}},
	{name: "xlam-tool-calls-object-two", give: "{\"tool_calls\": [\n  {\"name\": \"get_time\", \"arguments\": {}},\n  {\"name\": \"search\", \"arguments\": {\"query\": \"go\"}}\n]}",
		want: []wantTextCall{{"get_time", `{}`, "json-list"}, {"search", `{"query": "go"}`, "json-list"}}},
	{name: "xlam-tool-calls-object-other-key", give: `{"tool_calls": [{"name": "get_time", "arguments": {}}], "note": "x"}`, held: true},
	{name: "xlam-tool-calls-empty", give: `{"tool_calls": []}`, held: true},
	{name: "xlam-empty", give: `[]`},
	{name: "xlam-not-calls", give: `[{"city": "Paris"}, {"city": "Rome"}]`, held: true},
	{name: "xlam-numbers", give: `[1, 2, 3]`},
	{name: "xlam-in-prose", give: "The list is [{\"name\": \"get_time\", \"arguments\": {}}] as you can see."},
	{name: "xlam-cut-off", give: `[{"name": "search", "arguments": {"query": "go"`, held: true},
}

func init() {
	textCallCases = append(textCallCases, textCorpus2...)
	corpusFamilies = append(corpusFamilies, "minimax-m2", "deepseek-v3.2", "seed-oss", "internlm2", "command-r7b", "command-r", "gemma4", "hunyuan-v4", "functionary", "jamba", "apriel", "xlam")
}
