package repair_test

import (
	"fmt"

	"github.com/toolguard/toolguard/repair"
	"github.com/toolguard/toolguard/validate"
)

// The click tool of the classic bug reports, called with its key in another
// case: the key is renamed to the declared name, and the edit is recorded.
func ExampleArguments() {
	s, err := validate.Compile([]byte(`{"type":"object","properties":{"selector":{"type":"string"}},"required":["selector"]}`))
	if err != nil {
		panic(err)
	}
	res := repair.Arguments([]byte(`"{\"Selector\": \"myCoolButton\"}"`), s, repair.Options{Syntax: true, SchemaGuided: true})
	fmt.Println(string(res.Args), res.Valid())
	for _, e := range res.Edits {
		fmt.Println(e.Kind, e.Path, e.Before, "->", e.After)
	}
	// Output:
	// {"selector":"myCoolButton"} true
	// rename-key /selector "Selector" -> "selector"
}

// A key that is another word is never renamed, however likely its meaning:
// the call stays invalid, and its errors name what the tool declares, so
// the model corrects itself when asked again.
func ExampleArguments_anotherWord() {
	s, err := validate.Compile([]byte(`{"type":"object","properties":{"selector":{"type":"string"}},"required":["selector"]}`))
	if err != nil {
		panic(err)
	}
	res := repair.Arguments([]byte(`"{\"element\": \"myCoolButton\"}"`), s, repair.Options{Syntax: true, SchemaGuided: true, Tool: "click"})
	fmt.Println(res.Valid())
	fmt.Println(validate.Join(res.Errors))
	// Output:
	// false
	// /: missing properties: 'selector'
	// /: unknown property "element"; tool "click" declares "selector"
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
