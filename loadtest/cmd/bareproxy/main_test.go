package main

import (
	"context"
	"strings"
	"testing"
)

// TestHoldOutOfRangeIsRefused: -hold and -reserve take a size from 0 to
// maxHold, and refuse any other before they allocate or listen.
func TestHoldOutOfRangeIsRefused(t *testing.T) {
	for _, flag := range []string{"-hold", "-reserve"} {
		for _, v := range []string{"-1", "1073741825"} {
			err := run(context.Background(), []string{"-addr", "127.0.0.1:0", flag, v})
			if err == nil || !strings.Contains(err.Error(), flag+" "+v+": want a size from 0 to") {
				t.Errorf("%s %s: %v", flag, v, err)
			}
		}
	}
}
