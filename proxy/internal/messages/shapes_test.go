package messages

import (
	"testing"

	"github.com/toolguard/toolguard/proxy/internal/wire"
)

// TestShapesAreLowercase: wire.Strict compares a member name it does not
// know with the names of its Shape only when the name could fold to one,
// which holds only for Shapes of lowercase ASCII names.
func TestShapesAreLowercase(t *testing.T) {
	for _, s := range []wire.Shape{toolShape, blockShape, messageShape, requestShape, usageShape, replyShape} {
		if err := wire.LowercaseNames(s); err != nil {
			t.Error(err)
		}
	}
}
