package validate_test

import (
	"testing"

	"github.com/toolguard/toolguard/validate"
)

// A typical tool: a few typed properties, an enum, a nested object.
const benchSchema = `{"type":"object","properties":{
"location":{"type":"string","description":"The city and state, e.g. San Francisco, CA"},
"unit":{"type":"string","enum":["celsius","fahrenheit"]},
"days":{"type":"integer","minimum":1,"maximum":14},
"options":{"type":"object","properties":{"hourly":{"type":"boolean"}}}},
"required":["location"],"additionalProperties":false}`

const benchArgs = `{"location":"Boston, MA","unit":"fahrenheit","days":3,"options":{"hourly":true}}`

func BenchmarkValidateCachedSchema(b *testing.B) {
	c := validate.NewCache(16)
	if _, err := c.Get([]byte(benchSchema)); err != nil {
		b.Fatal(err)
	}
	schema, args := []byte(benchSchema), []byte(benchArgs)
	b.ReportAllocs()
	for b.Loop() {
		s, err := c.Get(schema)
		if err != nil {
			b.Fatal(err)
		}
		if _, errs := s.ValidateJSON(args); errs != nil {
			b.Fatal(errs)
		}
	}
}

func BenchmarkCompile(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := validate.Compile([]byte(benchSchema)); err != nil {
			b.Fatal(err)
		}
	}
}
