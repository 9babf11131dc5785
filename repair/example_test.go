package repair_test

import (
	"fmt"

	"github.com/toolguard/toolguard/repair"
	"github.com/toolguard/toolguard/validate"
)

// The click tool of the classic bug reports, called with a near-miss key: the
// key is renamed to the one missing property it plainly means, and the edit
// is recorded.
func ExampleArguments() {
	s, err := validate.Compile([]byte(`{"type":"object","properties":{"selector":{"type":"string"}},"required":["selector"]}`))
	if err != nil {
		panic(err)
	}
	res := repair.Arguments([]byte(`"{\"element\": \"myCoolButton\"}"`), s, repair.Options{Syntax: true, SchemaGuided: true})
	fmt.Println(string(res.Args), res.Valid())
	for _, e := range res.Edits {
		fmt.Println(e.Kind, e.Path, e.Before, "->", e.After)
	}
	// Output:
	// {"selector":"myCoolButton"} true
	// rename-key /selector "element" -> "selector"
}

// A missing required property is never made up: the call stays invalid, with
// the error the re-ask will carry.
func ExampleArguments_guess() {
	s, err := validate.Compile([]byte(`{"type":"object","properties":{"selector":{"type":"string"}},"required":["selector"]}`))
	if err != nil {
		panic(err)
	}
	res := repair.Arguments([]byte(`"{}"`), s, repair.Options{Syntax: true, SchemaGuided: true})
	fmt.Println(res.Valid(), validate.Join(res.Errors))
	// Output:
	// false /: missing properties: 'selector'
}

func ExampleToolName() {
	fmt.Println(repair.ToolName("GetWeather", []string{"get_weather", "get_time"}))
	fmt.Println(repair.ToolName("launch_rockets", []string{"get_weather", "get_time"}))
	// Output:
	// get_weather true
	//  false
}

// A model that declared tools wrote its call as text: the call becomes a
// tool call, and the prose before it stays the content.
func ExampleTextCalls() {
	text := "Let me check.\n<tool_call>\n{\"name\": \"getWeather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"
	declared := []string{"get_weather", "get_time"}
	calls := repair.TextCalls(text, declared, repair.TextFormats{Marked: true})
	for _, c := range calls {
		fmt.Println(c.Format, c.Name, string(c.Arguments))
	}
	fmt.Printf("%q\n", repair.TextContent(text, calls))
	// While streaming, the call is held back from its marker on.
	fmt.Println(repair.TextCallHold(text[:20], declared, repair.TextFormats{Marked: true}))
	// Output:
	// hermes get_weather {"city": "Paris"}
	// "Let me check."
	// 14
}
