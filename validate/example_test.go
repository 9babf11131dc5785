package validate_test

import (
	"fmt"

	"github.com/toolguard/toolguard/validate"
)

func ExampleCache() {
	cache := validate.NewCache(1024)
	s, err := cache.Get([]byte(`{"type":"object","properties":{"n":{"type":"integer"}},"additionalProperties":false}`))
	if err != nil {
		panic(err)
	}
	_, errs := s.ValidateJSON([]byte(`{"n":"5","m":1}`))
	for _, e := range errs {
		fmt.Println(e.Keyword, e)
	}
	// A schema may not read anything outside itself.
	_, err = cache.Get([]byte(`{"$ref":"file:///etc/passwd"}`))
	fmt.Println(err != nil)
	// Unordered output:
	// type /n: expected integer, but got string
	// additionalProperties /: additionalProperties 'm' not allowed
	// true
}
