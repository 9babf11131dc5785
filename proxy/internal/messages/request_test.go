package messages

import (
	"testing"

	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/proxy/internal/ladder/historytest"
	"github.com/toolguard/toolguard/proxy/internal/wire"
)

// blockSeeds are requests whose messages hold blocks of every kind the
// check reads: known and unknown types next to tool_use and tool_result
// blocks or not, values that are not objects, types that are not strings
// or are escaped, and escaped member names.
var blockSeeds = []string{
	`{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"text","text":"x"},{"type":"tool_use","id":"t","name":"a","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"ok"}]}]}`,
	`{"messages":[{"role":"assistant","content":[{"type":"tool_use","input":"{\"a\":1"},{"type":"widget"}]}]}`,
	`{"messages":[{"role":"assistant","content":[{"type":"widget"}]},{"role":"user","content":[{"type":"tool_result"},"text"]}]}`,
	`{"messages":[{"role":"user","content":[{"type":"tool_result"},{"type":7}]}]}`,
	`{"messages":[{"role":"user","content":[{"type":"tool_result"},{}]}]}`,
	`{"messages":[{"role":"user","content":[{"type":"tool_result"},[{"type":"text"}]]}]}`,
	`{"messages":[{"role":"user","content":[{"type":"tool_\u0072esult"},{"t\u0079pe":"odd"}]}]}`,
	`{"messages":[{"role":"user","content":[{"type":"text"},{"type":"image"}]},{"role":"assistant","content":{"type":"tool_use"}},"x",[{"content":[{"type":"tool_use"},{"type":"odd"}]}]]}`,
	`{"messages":[{"content":[{"type":"tool_use","input":"{}"},{"type":"tool_use"}],"role":"assistant"},{"role":"assistant","content":[{"input":"[1]","type":"tool_use"},{"type":"text","input":"{\"a\":1"}]}]}`,
}

// FuzzBlocks checks the reading of a request's blocks where the strict
// reading recorded them (blocksKnown) against the walk of every message
// with gjson: a request refused by the one is refused by the other, and
// the history is mended the same through a history cache (the recorded
// blocks) and without one (the walk).
func FuzzBlocks(f *testing.F) {
	for _, s := range blockSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		m, err := wire.ReadRequest(in, requestShape, wire.Items{Name: Items, Calls: historyBlocks}, nil, nil, wire.Repeats{})
		if err != nil {
			return
		}
		defer m.Release()
		walked := ""
		m.ItemsValue().ForEach(func(_, msg gjson.Result) bool {
			walked = unknownBlock(msg.Get("content"), requestBlocks, "tool_use", "tool_result")
			return walked == ""
		})
		if _, ok := m.Calls(); ok && blocksKnown(m) != (walked == "") {
			t.Fatalf("%s: blocks known %v, walked %q", in, blocksKnown(m), walked)
		}
		historytest.BothWays(t, m, MendHistory)
	})
}

// TestBlocksAreRecorded: the seeds' blocks are read from the strict
// reading's record, each as the walk reads it.
func TestBlocksAreRecorded(t *testing.T) {
	refused := 0
	for _, s := range blockSeeds {
		m, err := wire.ReadRequest([]byte(s), requestShape, wire.Items{Name: Items, Calls: historyBlocks}, nil, nil, wire.Repeats{})
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		if _, ok := m.Calls(); !ok {
			t.Errorf("%s: no blocks recorded", s)
		}
		if !blocksKnown(m) {
			refused++
		}
		m.Release()
	}
	if refused != 6 { // the second to the seventh
		t.Errorf("%d seeds refused, want 6", refused)
	}
}
