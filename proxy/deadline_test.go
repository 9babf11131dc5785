package proxy

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestUpstreamDeadlineCauses runs the deadline's timer to each of its ends
// and checks the cause it leaves on the request's context.
func TestUpstreamDeadlineCauses(t *testing.T) {
	const short, long = 20 * time.Millisecond, time.Hour
	tests := []struct {
		name          string
		header, total time.Duration
		headersIn     bool
		want          error
		atLeast       time.Duration
	}{
		{"no headers in their time", short, long, false, errUpstreamHeaderTimeout, short},
		{"headers in, then the whole time", short, 3 * short, true, errUpstreamTimeout, 3 * short},
		{"the whole time shorter than the headers'", long, short, false, errUpstreamTimeout, short},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d upstreamDeadline
			start := time.Now()
			ctx := d.begin(context.Background(), tt.header, tt.total)
			defer d.end()
			if tt.headersIn {
				d.headersIn()
			}
			<-ctx.Done()
			if got := context.Cause(ctx); got != tt.want {
				t.Errorf("cause %v, want %v", got, tt.want)
			}
			if !upstreamTimedOut(context.Cause(ctx)) {
				t.Errorf("cause %v is not an upstream timeout", context.Cause(ctx))
			}
			if took := time.Since(start); took < tt.atLeast {
				t.Errorf("cancelled after %v, before %v", took, tt.atLeast)
			}
		})
	}
	t.Run("ended", func(t *testing.T) {
		var d upstreamDeadline
		ctx := d.begin(context.Background(), short, short)
		d.end()
		if !errors.Is(ctx.Err(), context.Canceled) || upstreamTimedOut(context.Cause(ctx)) {
			t.Errorf("err %v, cause %v", ctx.Err(), context.Cause(ctx))
		}
	})
}
