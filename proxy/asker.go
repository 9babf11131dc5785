package proxy

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/proxy/internal/ladder"
	"github.com/toolguard/toolguard/proxy/internal/wire"
)

var _ ladder.Asker = (*exchange)(nil)

// Ask implements ladder.Asker: it writes the re-ask in the exchange's
// format, sends it (to the fallback if this is the turn's last and the
// policy says so) and reads the answer. The re-ask is a request of its
// own, non-streamed, with its own timeout, cancelled at once if the client
// goes away.
func (ex *exchange) Ask(ctx context.Context, t *ladder.Turn, attempt int) (ladder.Answer, error) {
	model, toFallback := ex.x.FallbackModel(t)
	body, err := ex.req.Reask(&ex.x, t, attempt, model)
	if err != nil {
		// A re-ask that cannot be written is not sent half-written.
		return ladder.Answer{}, fmt.Errorf("re-ask %d: write the request: %w", attempt, err)
	}
	rt, outreq, kind := ex.h.rt, ex.outreq, attemptReask
	if toFallback {
		rt, outreq = ex.toFallback(attempt, body)
		kind = attemptFallback
	}
	status, reply, err := ex.send(ctx, rt, outreq, body, kind)
	if err != nil {
		return ladder.Answer{}, fmt.Errorf("re-ask %d: %w", attempt, err)
	}
	if status < 200 || status > 299 {
		return ladder.Answer{}, fmt.Errorf("re-ask %d: the upstream answered with status %d: %s", attempt, status, wire.Clip(string(reply), 300))
	}
	ans, err := ex.req.Answer(t, reply)
	if err != nil {
		return ladder.Answer{}, fmt.Errorf("re-ask %d: %w", attempt, err)
	}
	if toFallback {
		ex.fb.model = gjson.GetBytes(reply, "model").String()
	}
	ex.replies = append(ex.replies, reply)
	ex.noteUsage(reply, true)
	return ans, nil
}

// send makes one re-ask upstream through rt.
func (ex *exchange) send(ctx context.Context, rt http.RoundTripper, outreq *http.Request, body []byte, kind string) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(withAttempt(ctx, kind, gjson.GetBytes(body, "model").String()), ex.h.cfg.UpstreamTimeout)
	defer cancel()
	req := outreq.Clone(ctx)
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.ContentLength = int64(len(body))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	req.Header.Del("Content-Length")
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := readLimited(resp.Body, resp.ContentLength, ex.h.cfg.MaxResponseBytes)
	if err != nil {
		return 0, nil, err
	}
	return resp.StatusCode, b, nil
}
