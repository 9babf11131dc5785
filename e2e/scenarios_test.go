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
	{name: "near-miss-key", first: `{"element": "myCoolButton"}`},
	{name: "truncated-json", first: `{"selector": "myCoolButton"`},
	{name: "missing-field-reask", first: `{}`, corrected: wantArgs, wantReasks: 1},
	{name: "never-corrects", first: `{}`, corrected: `{}`, wantError: true, wantReasks: maxReasks},
}
