package chat

import (
	"strings"
	"testing"

	"github.com/toolguard/toolguard/proxy/internal/wire"
)

func TestStrictJSON(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		reason string // "" when the body must pass
	}{
		{name: "plain", body: `{"model":"m","tools":[{"type":"function","function":{"name":"f"}}]}`},
		{name: "escaped name reads as itself", body: `{"t\u006fols":[]}`},
		{name: "case differs outside what is read", body: `{"tools":[{"function":{"parameters":{"properties":{"ID":{},"id":{}}}}}]}`},
		{name: "vendor extension", body: `{"chatTemplateKwargs":{"a":1},"tools":[]}`},
		{name: "duplicate top-level", body: `{"tools":[],"tools":[{}]}`, reason: "duplicate member name"},
		{name: "duplicate deep", body: `{"x":{"y":{"a":1,"a":2}}}`, reason: "duplicate member name"},
		{name: "duplicate escaped", body: `{"tools":[],"t\u006fols":[]}`, reason: "duplicate member name"},
		{name: "letter case top", body: `{"Tools":[]}`, reason: "only in letter case"},
		{name: "kelvin sign", body: "{\"tools\":[{\"function\":{\"name\":\"f\",\"parameters\":{}}}],\"tool_choice\":\"auto\",\"model\":\"\u212aa\"}"},
		{name: "long s in a name", body: "{\"tool\u017f\":[]}", reason: "only in letter case"},
		{name: "letter case in a call", body: `{"messages":[{"tool_calls":[{"Function":{}}]}]}`, reason: "only in letter case"},
		{name: "fold of a kelvin", body: "{\"response_format\":{\"json_\u017fchema\":{}}}", reason: "only in letter case"},
		// .NET's case-insensitive binding (ASP.NET Core's default) compares
		// names by their upper case: dotless ı is I, as İ is i in lower case.
		{name: "dotless i", body: "{\"tools\":[{\"type\":\"function\",\"funct\u0131on\":{}}]}", reason: "only in letter case"},
		{name: "dotted capital I", body: "{\"tool_cho\u0130ce\":\"auto\"}", reason: "only in letter case"},
		{name: "bom", body: "\xef\xbb\xbf{}", reason: "byte order mark"},
		{name: "nan", body: `{"temperature":NaN}`, reason: "not valid JSON"},
		{name: "infinity", body: `{"temperature":Infinity}`, reason: "not valid JSON"},
		{name: "trailing data", body: `{"tools":[]} {"tools":[{}]}`, reason: "more than one JSON value"},
		{name: "trailing garbage", body: `{}x`, reason: "more than one JSON value"},
		{name: "invalid utf-8", body: "{\"a\":\"\xff\"}", reason: "UTF-8"},
		{name: "utf-16", body: "\xff\xfe{\x00}\x00", reason: "not valid"},
		{name: "truncated", body: `{"tools":[`, reason: "ends before"},
		{name: "empty", body: ``, reason: "ends before"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := wire.Strict([]byte(tt.body), requestShape)
			switch {
			case tt.reason == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.reason != "" && err == nil:
				t.Fatalf("accepted, want a refusal saying %q", tt.reason)
			case tt.reason != "" && !strings.Contains(err.Error(), tt.reason):
				t.Fatalf("refused with %q, want %q", err, tt.reason)
			}
		})
	}
}
