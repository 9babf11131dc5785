package proxy

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"log/slog"
	"math/rand/v2"
	"net/http"
)

// requestIDHeader is the response header that names a request, so that what
// a client reports can be found in the log: every log line of the request
// carries the same request_id.
const requestIDHeader = "X-Toolguard-Request-Id"

// requestID returns the id for a request: the client's X-Request-Id when it
// is a plain token of reasonable length (so an id the client already logs
// carries through), or a new random one. A client's value is never trusted
// further than that: it reaches the log, so it may hold no spaces or control
// characters.
func requestID(r *http.Request) string {
	if id := headerGet(r.Header, "X-Request-Id"); plainToken(id) {
		return id
	}
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], rand.Uint64())
	var id [16]byte
	hex.Encode(id[:], b[:])
	return string(id[:])
}

func plainToken(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// requestIDs adds the request_id of the request whose context a record is
// logged with, so every line about a request can be found by its id without
// each call site passing it.
type requestIDs struct{ slog.Handler }

func (h requestIDs) Handle(ctx context.Context, rec slog.Record) error {
	if info := requestInfoFrom(ctx); info != nil {
		rec.AddAttrs(requestIDAttr(info.id))
	}
	return h.Handler.Handle(ctx, rec)
}

// requestIDAttr is the attribute that names a request on its log lines.
func requestIDAttr(id string) slog.Attr { return slog.String("request_id", id) }

func (h requestIDs) WithAttrs(attrs []slog.Attr) slog.Handler {
	return requestIDs{h.Handler.WithAttrs(attrs)}
}

func (h requestIDs) WithGroup(name string) slog.Handler {
	return requestIDs{h.Handler.WithGroup(name)}
}
