package proxy

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/toolguard/toolguard/policy"
	"github.com/toolguard/toolguard/proxy/internal/ladder"
	"github.com/toolguard/toolguard/repair"
)

// BenchmarkFinish measures what every inspected chat completion pays after
// its response: the metrics and the access-log line (JSON, as toolguard
// logs by default, to a discarding writer), for a valid call and a repaired
// one, through slog and written directly (Options.AccessLog, as cmd/proxy
// logs), and with the log at warn, where the line is not written.
func BenchmarkFinish(b *testing.B) {
	cases := []struct {
		name   string
		level  slog.Level
		edits  int
		direct bool
	}{
		{"valid", slog.LevelInfo, 0, false},
		{"repaired", slog.LevelInfo, 1, false},
		{"valid-direct", slog.LevelInfo, 0, true},
		{"repaired-direct", slog.LevelInfo, 1, true},
		{"valid-log-warn", slog.LevelWarn, 0, false},
	}
	for _, tt := range cases {
		b.Run(tt.name, func(b *testing.B) {
			cfg := policy.Default()
			cfg.UpstreamURL = "http://127.0.0.1:1/v1"
			log := slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: tt.level}))
			o := Options{Config: cfg, Logger: log}
			if tt.direct {
				o.AccessLog = io.Discard
			}
			h, err := New(o)
			if err != nil {
				b.Fatal(err)
			}
			r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil)
			r.Pattern = "POST /v1/chat/completions"
			c := &ladder.Call{Name: "click", Tool: &ladder.Tool{Name: "click"}}
			outcome := ladder.OutcomeValid
			if tt.edits > 0 {
				c.Edits = []repair.Edit{{Kind: repair.KindRenameKey, Path: "/element"}}
				outcome = ladder.OutcomeRepaired
			}
			ex := &exchange{h: h, x: ladder.Exchange{Outcome: outcome, Calls: []*ladder.Call{c}}}
			rec := &recorder{ResponseWriter: httptest.NewRecorder(), status: http.StatusOK, bytes: 470}
			b.ReportAllocs()
			for b.Loop() {
				info := &requestInfo{start: time.Now(), ex: ex}
				info.upstreamStatus.Store(http.StatusOK)
				info.upstreamNanos.Store(int64(100 * time.Microsecond))
				h.finish(rec, r, info)
			}
		})
	}
}
