package repair

// The tables below feed the unit tests and seed the fuzz targets.

const (
	clickSchema = `{"type":"object","properties":{"selector":{"type":"string"}},"required":["selector"]}`
	// searchSchema has a bit of everything the schema-guided step acts on.
	searchSchema = `{"type":"object","properties":{
		"query":{"type":"string"},
		"max_results":{"type":"integer"},
		"ratio":{"type":"number"},
		"exact":{"type":"boolean"},
		"sort":{"type":"string","enum":["Relevance","Date"]},
		"tags":{"type":"array","items":{"type":"string"}},
		"filter":{"type":"object","properties":{"lang":{"type":"string"},"year":{"type":"integer"}},"required":["lang"],"additionalProperties":false},
		"points":{"type":"array","items":{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"]}},
		"mode":{"anyOf":[{"type":"integer"},{"type":"boolean"}]}
	},"required":["query"],"additionalProperties":false}`
	// twoSchema requires two strings that one key could equally mean.
	twoSchema = `{"type":"object","properties":{"start_date":{"type":"string"},"start_time":{"type":"string"}},"required":["start_date","start_time"]}`
	// openSchema accepts {}.
	openSchema = `{"type":"object","properties":{"verbose":{"type":"boolean"}}}`
)

// argumentsCase is one call: the schema, the raw function.arguments field,
// and the arguments it must mend to ("" when it must be left for a re-ask).
type argumentsCase struct {
	name   string
	schema string
	give   string
	want   string
	kinds  []Kind
}

var argumentsCases = []argumentsCase{
	// Valid as received: no edit.
	{name: "valid", schema: clickSchema, give: `"{\"selector\": \"#go\"}"`, want: `{"selector": "#go"}`},
	{name: "valid-html-chars", schema: clickSchema, give: `"{\"selector\":\"a<b>&c\"}"`, want: `{"selector":"a<b>&c"}`},

	// The classic click cases.
	{name: "click-bare-string", schema: clickSchema, give: `"\"myCoolButton\""`, want: `{"selector":"myCoolButton"}`, kinds: []Kind{KindWrapValue}},
	{name: "click-unquoted-text", schema: clickSchema, give: `"myCoolButton"`, want: `{"selector":"myCoolButton"}`, kinds: []Kind{KindJSONRepair, KindWrapValue}},
	{name: "click-other-case-key", schema: clickSchema, give: `"{\"Selector\": \"myCoolButton\"}"`, want: `{"selector":"myCoolButton"}`, kinds: []Kind{KindRenameKey}},
	{name: "click-truncated", schema: clickSchema, give: `"{\"selector\": \"myCoolButton\""`, want: `{"selector":"myCoolButton"}`, kinds: []Kind{KindJSONRepair}},

	// Syntax.
	{name: "object-arguments", schema: clickSchema, give: `{"selector": "#go"}`, want: `{"selector":"#go"}`, kinds: []Kind{KindObjectArguments}},
	{name: "empty-arguments", schema: openSchema, give: `""`, want: `{}`, kinds: []Kind{KindEmptyArguments}},
	{name: "null-arguments", schema: openSchema, give: `"null"`, want: `{}`, kinds: []Kind{KindEmptyArguments}},
	{name: "fence", schema: clickSchema, give: `"` + "```json\\n{\\\"selector\\\": \\\"#go\\\"}\\n```" + `"`, want: `{"selector":"#go"}`, kinds: []Kind{KindStripFence}},
	{name: "fence-and-prose", schema: clickSchema, give: `"Sure:\n` + "```\\n{\\\"selector\\\": \\\"#go\\\"}\\n```" + `\nDone."`, want: `{"selector":"#go"}`, kinds: []Kind{KindStripFence}},
	{name: "tokens", schema: clickSchema, give: `"<|python_tag|>{\"selector\": \"#go\"}<|call|>"`, want: `{"selector":"#go"}`, kinds: []Kind{KindStripTokens}},
	{name: "tool-call-tags", schema: clickSchema, give: `"<tool_call>{\"selector\": \"#go\"}</tool_call>"`, want: `{"selector":"#go"}`, kinds: []Kind{KindStripTokens}},
	{name: "prose-before-and-after", schema: clickSchema, give: `"Here you go: {\"selector\": \"#go\"} Let me know."`, want: `{"selector":"#go"}`, kinds: []Kind{KindStripProse, KindStripProse}},
	{name: "single-quotes", schema: clickSchema, give: `"{'selector': '#go'}"`, want: `{"selector":"#go"}`, kinds: []Kind{KindJSONRepair}},
	{name: "python-literals", schema: searchSchema, give: `"{'query': 'go', 'exact': True}"`, want: `{"exact":true,"query":"go"}`, kinds: []Kind{KindJSONRepair}},
	{name: "trailing-comma", schema: clickSchema, give: `"{\"selector\": \"#go\",}"`, want: `{"selector":"#go"}`, kinds: []Kind{KindJSONRepair}},
	{name: "comment", schema: clickSchema, give: `"{\"selector\": \"#go\" // the button\n}"`, want: `{"selector":"#go"}`, kinds: []Kind{KindJSONRepair}},
	{name: "double-encoded", schema: clickSchema, give: `"\"{\\\"selector\\\": \\\"#go\\\"}\""`, want: `{"selector":"#go"}`, kinds: []Kind{KindDoubleEncoded}},
	{name: "triple-encoded", schema: clickSchema, give: `"\"\\\"{\\\\\\\"selector\\\\\\\": \\\\\\\"#go\\\\\\\"}\\\"\""`, want: `{"selector":"#go"}`, kinds: []Kind{KindDoubleEncoded, KindDoubleEncoded}},
	{name: "concatenated-identical", schema: clickSchema, give: `"{\"selector\": \"#go\"}{\"selector\": \"#go\"}"`, want: `{"selector":"#go"}`, kinds: []Kind{KindConcatenatedObjects}},

	// Schema-guided.
	{name: "string-for-integer", schema: searchSchema, give: `"{\"query\": \"go\", \"max_results\": \"5\"}"`, want: `{"max_results":5,"query":"go"}`, kinds: []Kind{KindCoerceType}},
	{name: "zero-fraction-for-integer", schema: searchSchema, give: `"{\"query\": \"go\", \"max_results\": \"5.0\"}"`, want: `{"max_results":5,"query":"go"}`, kinds: []Kind{KindCoerceType}},
	{name: "string-for-number", schema: searchSchema, give: `"{\"query\": \"go\", \"ratio\": \"2.5\"}"`, want: `{"query":"go","ratio":2.5}`, kinds: []Kind{KindCoerceType}},
	{name: "string-for-boolean", schema: searchSchema, give: `"{\"query\": \"go\", \"exact\": \"true\"}"`, want: `{"exact":true,"query":"go"}`, kinds: []Kind{KindCoerceType}},
	{name: "number-for-string", schema: searchSchema, give: `"{\"query\": 42}"`, want: `{"query":"42"}`, kinds: []Kind{KindCoerceType}},
	{name: "string-for-array", schema: searchSchema, give: `"{\"query\": \"go\", \"tags\": \"[\\\"a\\\",\\\"b\\\"]\"}"`, want: `{"query":"go","tags":["a","b"]}`, kinds: []Kind{KindCoerceType}},
	{name: "string-for-object", schema: searchSchema, give: `"{\"query\": \"go\", \"filter\": \"{\\\"lang\\\":\\\"en\\\"}\"}"`, want: `{"filter":{"lang":"en"},"query":"go"}`, kinds: []Kind{KindCoerceType}},
	{name: "scalar-for-array", schema: searchSchema, give: `"{\"query\": \"go\", \"tags\": \"a\"}"`, want: `{"query":"go","tags":["a"]}`, kinds: []Kind{KindWrapArray}},
	{name: "object-for-array", schema: searchSchema, give: `"{\"query\": \"go\", \"points\": {\"x\": 1}}"`, want: `{"points":[{"x":1}],"query":"go"}`, kinds: []Kind{KindWrapArray}},
	{name: "nested-in-array", schema: searchSchema, give: `"{\"query\": \"go\", \"points\": [{\"x\": \"1\"}, {\"X\": 2}]}"`, want: `{"points":[{"x":1},{"x":2}],"query":"go"}`, kinds: []Kind{KindCoerceType, KindRenameKey}},
	{name: "enum-case", schema: searchSchema, give: `"{\"query\": \"go\", \"sort\": \"date\"}"`, want: `{"query":"go","sort":"Date"}`, kinds: []Kind{KindEnumCase}},
	{name: "camel-case-key", schema: searchSchema, give: `"{\"query\": \"go\", \"maxResults\": 5}"`, want: `{"max_results":5,"query":"go"}`, kinds: []Kind{KindRenameKey}},
	{name: "plural-key", schema: searchSchema, give: `"{\"query\": \"go\", \"tag\": [\"a\"]}"`, want: `{"query":"go","tags":["a"]}`, kinds: []Kind{KindRenameKey}},
	{name: "kebab-case-key", schema: searchSchema, give: `"{\"query\": \"go\", \"Max-Results\": 5}"`, want: `{"max_results":5,"query":"go"}`, kinds: []Kind{KindRenameKey}},
	{name: "drop-unknown", schema: searchSchema, give: `"{\"query\": \"go\", \"page_token\": \"abc\"}"`, want: `{"query":"go"}`, kinds: []Kind{KindDropProperty}},
	{name: "drop-unknown-nested", schema: searchSchema, give: `"{\"query\": \"go\", \"filter\": {\"lang\": \"en\", \"colour\": 1}}"`, want: `{"filter":{"lang":"en"},"query":"go"}`, kinds: []Kind{KindDropProperty}},
	{name: "anyof-one-branch", schema: searchSchema, give: `"{\"query\": \"go\", \"mode\": \"3\"}"`, want: `{"mode":3,"query":"go"}`, kinds: []Kind{KindCoerceType}},
	{name: "envelope-arguments", schema: clickSchema, give: `"{\"arguments\": {\"selector\": \"#go\"}}"`, want: `{"selector":"#go"}`, kinds: []Kind{KindUnwrapEnvelope}},
	{name: "envelope-name-arguments", schema: clickSchema, give: `"{\"name\": \"click\", \"arguments\": {\"selector\": \"#go\"}}"`, want: `{"selector":"#go"}`, kinds: []Kind{KindUnwrapEnvelope}},
	{name: "envelope-encoded-arguments", schema: clickSchema, give: `"{\"name\": \"click\", \"arguments\": \"{\\\"selector\\\": \\\"#go\\\"}\"}"`, want: `{"selector":"#go"}`, kinds: []Kind{KindUnwrapEnvelope}},
	{name: "envelope-input", schema: searchSchema, give: `"{\"input\": {\"query\": \"go\", \"max_results\": \"3\"}}"`, want: `{"max_results":3,"query":"go"}`, kinds: []Kind{KindUnwrapEnvelope, KindCoerceType}},
	{name: "bare-number-for-one-property", schema: `{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`, give: `"5"`, want: `{"n":5}`, kinds: []Kind{KindWrapValue}},

	// Must not mend: each is left for the re-ask.
	// Another word is not a name in another style, however close: only the
	// model can say whether "element" is the selector, or "qeury" the query.
	{name: "click-element-key", schema: clickSchema, give: `"{\"element\": \"myCoolButton\"}"`},
	{name: "typo-key", schema: searchSchema, give: `"{\"qeury\": \"go\"}"`},
	{name: "missing-required", schema: searchSchema, give: `"{\"max_results\": 5}"`},
	{name: "non-numeric-for-number", schema: searchSchema, give: `"{\"query\": \"go\", \"ratio\": \"about two\"}"`},
	{name: "fraction-for-integer", schema: searchSchema, give: `"{\"query\": \"go\", \"max_results\": \"5.5\"}"`},
	{name: "leading-zeros-for-integer", schema: searchSchema, give: `"{\"query\": \"go\", \"max_results\": \"007\"}"`},
	{name: "huge-exponent-for-number", schema: searchSchema, give: `"{\"query\": \"go\", \"ratio\": \"1e400\"}"`},
	{name: "key-for-two-properties", schema: twoSchema, give: `"{\"start\": \"2024-05-01\"}"`},
	{name: "key-for-two-properties-typo", schema: twoSchema, give: `"{\"start_tme\": \"10:00\", \"start_dat\": \"x\", \"start_daet\": \"y\"}"`},
	{name: "enum-two-matches", schema: `{"type":"object","properties":{"u":{"enum":["KB","kb"]}},"required":["u"]}`, give: `"{\"u\": \"Kb\"}"`},
	{name: "truncated-in-string", schema: clickSchema, give: `"{\"selector\": \"myCool"`},
	{name: "truncated-in-number", schema: searchSchema, give: `"{\"query\": \"go\", \"max_results\": 12"`},
	{name: "truncated-after-key", schema: searchSchema, give: `"{\"query\": \"go\", \"max_results\""`},
	{name: "truncated-after-colon", schema: searchSchema, give: `"{\"query\": \"go\", \"max_results\":"`},
	{name: "truncated-nested", schema: searchSchema, give: `"{\"query\": \"go\", \"tags\": [\"a\", \"b\""`},
	{name: "truncated-members-missing", schema: searchSchema, give: `"{\"query\": \"DELETE FROM users\""`},
	{name: "concatenated-different", schema: clickSchema, give: `"{\"selector\": \"#a\"}{\"selector\": \"#b\"}"`},
	{name: "two-code-blocks", schema: clickSchema, give: `"` + "```\\n{\\\"selector\\\": \\\"#a\\\"}\\n```\\nor\\n```\\n{\\\"selector\\\": \\\"#b\\\"}\\n```" + `"`},
	{name: "prose-only", schema: clickSchema, give: `"I cannot click that button."`},
	{name: "prose-with-two-objects", schema: clickSchema, give: `"Either {\"selector\": \"#a\"} or {\"selector\": \"#b\"}"`},
	{name: "empty-where-required", schema: clickSchema, give: `""`},
	{name: "wrap-two-required", schema: twoSchema, give: `"\"2024-05-01\""`},
	{name: "element-wrong-type", schema: clickSchema, give: `"{\"element\": 5}"`},
	{name: "element-with-second-key", schema: clickSchema, give: `"{\"element\": \"#a\", \"timeout\": 5}"`},
	{name: "envelope-key-declared", schema: `{"type":"object","properties":{"input":{"type":"object"},"x":{"type":"string"}},"required":["x"]}`, give: `"{\"input\": {\"x\": \"a\"}}"`},
	{name: "array-arguments", schema: clickSchema, give: `[1]`},
	{name: "number-arguments", schema: clickSchema, give: `5`},
}

// syntaxCases are history arguments: want "" means Syntax must fail.
var syntaxCases = []struct {
	name  string
	give  string
	want  string
	kinds []Kind
}{
	{name: "valid", give: `"{\"a\": 1}"`, want: `{"a": 1}`},
	{name: "object", give: `{"a": 1, "b": [1, 2]}`, want: `{"a":1,"b":[1,2]}`, kinds: []Kind{KindObjectArguments}},
	{name: "empty", give: `""`, want: `{}`, kinds: []Kind{KindEmptyArguments}},
	{name: "fence", give: `"` + "```json\\n{\\\"a\\\": 1}\\n```" + `"`, want: `{"a":1}`, kinds: []Kind{KindStripFence}},
	{name: "python", give: `"{'a': None, 'b': False}"`, want: `{"a":null,"b":false}`, kinds: []Kind{KindJSONRepair}},
	{name: "truncated", give: `"{\"a\": [1, 2]"`, want: `{"a":[1,2]}`, kinds: []Kind{KindJSONRepair}},
	{name: "double-encoded", give: `"\"{\\\"a\\\": 1}\""`, want: `{"a":1}`, kinds: []Kind{KindDoubleEncoded}},
	{name: "escaped-json", give: `"{\\\"a\\\": 1}"`, want: `{"a":1}`, kinds: []Kind{KindJSONRepair}},
	{name: "keeps-html-chars", give: `"{'a': '<b>&'}"`, want: `{"a":"<b>&"}`, kinds: []Kind{KindJSONRepair}},
	{name: "bare-string", give: `"\"myCoolButton\""`},
	{name: "array", give: `"[1, 2]"`},
	{name: "truncated-in-string", give: `"{\"a\": \"abc"`},
	{name: "prose", give: `"no arguments needed"`},
	{name: "number", give: `5`},
}
