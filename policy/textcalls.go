package policy

// TextCalls says which tool calls written as text in a reply's content are
// turned into real calls (TOOLGUARD_TEXT_CALLS, and the text_calls key of a
// tool's policy):
//
//   - off: none; the content stays as the model wrote it;
//   - marked (the default): calls written in a format with explicit markers
//     (Hermes <tool_call>, Qwen3-Coder and GLM tags, Mistral [TOOL_CALLS],
//     Llama's <|python_tag|>, pythonic call lists, DeepSeek's markers), which
//     prose does not contain by accident;
//   - json: marked, and a bare JSON object or a fenced JSON block naming a
//     declared tool, which a model may also write to show an example;
//   - all: json, and ReAct's Action: / Action Input: lines, which only a
//     client that asked for ReAct expects.
type TextCalls string

// The text-call settings.
const (
	TextCallsOff    TextCalls = "off"
	TextCallsMarked TextCalls = "marked"
	TextCallsJSON   TextCalls = "json"
	TextCallsAll    TextCalls = "all"
)

// Valid reports whether t is one of the settings.
func (t TextCalls) Valid() bool {
	switch t {
	case TextCallsOff, TextCallsMarked, TextCallsJSON, TextCallsAll:
		return true
	}
	return false
}

// Marked, BareJSON and ReAct say which groups of formats t turns into calls.
func (t TextCalls) Marked() bool {
	return t == TextCallsMarked || t == TextCallsJSON || t == TextCallsAll
}
func (t TextCalls) BareJSON() bool { return t == TextCallsJSON || t == TextCallsAll }
func (t TextCalls) ReAct() bool    { return t == TextCallsAll }

// rank orders the settings from least to most converted.
func (t TextCalls) rank() int {
	switch t {
	case TextCallsMarked:
		return 1
	case TextCallsJSON:
		return 2
	case TextCallsAll:
		return 3
	}
	return 0
}

// Cap returns the narrower of t and max.
func (t TextCalls) Cap(max TextCalls) TextCalls {
	if max.rank() < t.rank() {
		return max
	}
	return t
}
