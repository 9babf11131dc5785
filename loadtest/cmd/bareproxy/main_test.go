package main

import (
	"context"
	"strings"
	"testing"
)

// TestHoldOutOfRangeIsRefused: -hold takes a size from 0 to maxHold, and
// refuses any other before it allocates or listens.
func TestHoldOutOfRangeIsRefused(t *testing.T) {
	for _, v := range []string{"-1", "1073741825"} {
		err := run(context.Background(), []string{"-addr", "127.0.0.1:0", "-hold", v})
		if err == nil || !strings.Contains(err.Error(), "-hold "+v+": want a size from 0 to") {
			t.Errorf("-hold %s: %v", v, err)
		}
	}
}
