package serving

import (
	"net/http"
	"testing"
	"time"

	"github.com/toolguard/toolguard/policy"
)

func TestServerTakesTheConfiguredTimeouts(t *testing.T) {
	for _, read := range []time.Duration{3 * time.Second, time.Minute} {
		cfg := policy.Default()
		cfg.ReadTimeout, cfg.WriteTimeout, cfg.IdleTimeout = read, 7*time.Minute, 11*time.Second
		s := Server(http.NotFoundHandler(), cfg, nil)
		if want := min(read, 10*time.Second); s.ReadHeaderTimeout != want {
			t.Errorf("read timeout %v: header timeout %v, want %v", read, s.ReadHeaderTimeout, want)
		}
		if s.ReadTimeout != read || s.WriteTimeout != 7*time.Minute || s.IdleTimeout != 11*time.Second {
			t.Errorf("timeouts %v %v %v, want %v 7m0s 11s", s.ReadTimeout, s.WriteTimeout, s.IdleTimeout, read)
		}
	}
}
