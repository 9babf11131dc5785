package e2e

// A scenario is what the scripted model does with the click tool, declared
// as {"selector": string} with selector required.
type scenario struct {
	name string
	// first is the arguments of the model's first tool call.
	first string
	// corrected is the arguments the model sends when toolguard re-asks.
	corrected string
	// wantError says that no valid call can come of it: the client must
	// get toolguard's error.
	wantError bool
	// wantReasks is how many times toolguard asks the model again.
	wantReasks int
	// text, if set, is the model's first answer written as text in the
	// content, with no tool call: a call written as text.
	text string
	// wantMessage and wantStatus are the error the client must get when it
	// is not toolguard's failure to make a call valid (toolguardMessage,
	// 400): a reply toolguard refuses to pass unchecked.
	wantMessage string
	wantStatus  int
}

// maxReasks is TOOLGUARD_MAX_REASKS for every toolguard the suite starts.
const maxReasks = 2

// wantArgs is the one input every tool function must receive.
const wantArgs = `{"selector":"myCoolButton"}`

// toolguardMessage is the part of toolguard's failure message that every
// client's error must carry.
const toolguardMessage = "could not be made valid"

var scenarios = []scenario{
	{name: "bare-string", first: `"myCoolButton"`},
	{name: "near-miss-key", first: `{"element": "myCoolButton"}`, corrected: wantArgs, wantReasks: 1},
	{name: "truncated-json", first: `{"selector": "myCoolButton"`},
	{name: "missing-field-reask", first: `{}`, corrected: wantArgs, wantReasks: 1},
	{name: "never-corrects", first: `{}`, corrected: `{}`, wantError: true, wantReasks: maxReasks},
}

// textScenarios are models that write their click call as text in the
// content, as serving stacks without a tool parser return it.
var textScenarios = []scenario{
	{name: "hermes-text", text: `<tool_call>{"name": "click", "arguments": {"selector": "myCoolButton"}}</tool_call>`},
	{name: "hermes-text-near-miss", text: "I'll click it.\n<tool_call>{\"name\": \"click\", \"arguments\": {\"element\": \"myCoolButton\"}}</tool_call>", corrected: wantArgs, wantReasks: 1},
	{name: "mistral-text", text: `[TOOL_CALLS][{"name": "click", "arguments": {"selector": "myCoolButton"}}]`},
}
