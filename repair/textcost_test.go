package repair

import (
	"math"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// textCostInputs are crafted contents for the readers of textinvoke.go,
// each n times a unit: many parameters in one call, unclosed tags in a
// closed block, deep or wide objects, long lists, segments. Each is what a
// hostile upstream could send as a reply's content.
var textCostInputs = map[string]func(n int) string{
	"minimax-params": func(n int) string {
		return mm(mmInvoke("search", strings.Repeat(`<parameter name="q">x</parameter>`, n)))
	},
	"minimax-unclosed": func(n int) string { return mm(mmInvoke("search", strings.Repeat(`<parameter name="q">x`, n))) },
	"dsml-params": func(n int) string {
		return dsml(dsw, dsmlInvoke(dsw, "search", strings.Repeat(dsmlParam(dsw, "q", "false", "[1,2]"), n)))
	},
	"gemma-wide":       func(n int) string { return gemma("search", "{"+strings.Repeat("k:"+gq("v")+",", n)+"z:1}") },
	"gemma-deep":       func(n int) string { return gemma("search", strings.Repeat("{a:", n)+"1"+strings.Repeat("}", n)) },
	"gemma-open-quote": func(n int) string { return gemma("search", "{q:"+gemmaQuote+strings.Repeat("x", 8*n)) },
	"cohere-list": func(n int) string {
		return cohere("[" + strings.Repeat(`{"tool_name":"get_time","x":1},`, n) + `{"tool_name":"get_time"}]`)
	},
	"command-r-list": func(n int) string {
		return "Action: ```json\n[" + strings.Repeat(`{"tool_name":"get_time","parameters":{"a":[1,2,3]}},`, n) + "{}]\n```"
	},
	"hunyuan-v4-pairs": func(n int) string {
		return "<tool_calls><tool_call>search" + strings.Repeat("<arg_key>q</arg_key><arg_value>v</arg_value>", n) + "</tool_call></tool_calls>"
	},
	"functionary-segments": func(n int) string { return strings.Repeat(">>>get_time\n{\"a\":[1,2,3]}\n", n) },
	"seed-params": func(n int) string {
		return seedCall("search", strings.Repeat("<parameter=q>\nv\n</parameter>\n", n))
	},
	"internlm-object": func(n int) string {
		return intern(`{"name": "search", "parameters": {` + strings.Repeat(`"a": [1, 2],`, n) + `"z": 1}}`)
	},
}

// textCost is what reading text for calls and computing its stream hold
// allocates, in bytes: the work of the readers, which build what they read.
// It is measured after a first reading, with no collection until it is
// done: a collection empties the pools of encoding/json, which the readers
// call, and what they held would be allocated again, more or less from one
// measure to the next (a doubled input measured from 1.1 to 5 times the
// allocations). It runs on one P: what a pool holds in one P's private slot
// is out of reach of a goroutine moved to another, and on a busy machine the
// scheduler moves it often enough to take a doubled input to 3.6 times the
// allocations. The least of three measures is kept, since anything else that
// perturbs a measure only adds to it.
func textCost(text string) uint64 {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	TextCalls(text, textTools, allTextFormats)
	TextCallHold(text, textTools, allTextFormats)
	least := uint64(math.MaxUint64)
	for range 3 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range 3 {
			TextCalls(text, textTools, allTextFormats)
			TextCallHold(text, textTools, allTextFormats)
		}
		runtime.ReadMemStats(&after)
		least = min(least, after.TotalAlloc-before.TotalAlloc)
	}
	return least
}

// TestTextCallReadersCostIsLinear: doubling a crafted content at most
// doubles (with slack) what reading it costs, for every reader added for
// the formats of textinvoke.go.
func TestTextCallReadersCostIsLinear(t *testing.T) {
	if raceEnabled {
		// .ci/run runs it without the race detector too.
		t.Skip("the race detector's sync.Pool drops a quarter of what is put back, at random: allocations vary too much to compare")
	}
	for name, build := range textCostInputs {
		t.Run(name, func(t *testing.T) {
			small, large := build(1000), build(2000)
			if len(large) > maxTextScan {
				t.Fatalf("%d bytes: over the scan limit, not read at all", len(large))
			}
			a, b := textCost(small), textCost(large)
			t.Logf("%d bytes: %d B allocated; %d bytes: %d B", len(small), a, len(large), b)
			if b > 3*a+64<<10 {
				t.Errorf("doubling the content (%d to %d bytes) took the allocations from %d to %d bytes", len(small), len(large), a, b)
			}
		})
	}
}
