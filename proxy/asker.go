package proxy

import (
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
	// A re-ask is at least the request: one that cannot fit is not
	// written.
	if err := ex.overAllowance(attempt, ex.sent); err != nil {
		return ladder.Answer{}, err
	}
	model, toFallback := ex.x.FallbackModel(t)
	body, err := ex.req.Reask(&ex.x, t, attempt, model)
	if err != nil {
		// A re-ask that cannot be written is not sent half-written.
		return ladder.Answer{}, fmt.Errorf("re-ask %d: write the request: %w", attempt, err)
	}
	if err := ex.overAllowance(attempt, int64(len(body))); err != nil {
		return ladder.Answer{}, err
	}
	ex.reaskBytes += int64(len(body))
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

// reaskAllowance is the most that the re-asks of a request that came in
// as received bytes may send upstream in all: a re-ask resends the whole
// request, so a body that decoded to many times its size (see
// maxDecodeRatio) would be sent that many times more with each. Four times
// the request and 4 MiB leave the usual re-asks of an uncompressed request
// (two, each the request and a reply) untouched; a request whose re-asks
// would pass it gets none, and its calls the configured failure.
func reaskAllowance(received int64) int64 { return 4*received + 4<<20 }

// overAllowance is the error of a re-ask of n bytes that would take the
// request's re-asks past reaskAllowance, or nil.
func (ex *exchange) overAllowance(attempt int, n int64) error {
	if sent, allowed := ex.reaskBytes+n, reaskAllowance(ex.received); sent > allowed {
		return fmt.Errorf("re-ask %d would take the bytes re-asks send upstream to %d or more, over the %d allowed for a request of %d bytes: %w",
			attempt, sent, allowed, ex.received, ladder.ErrNotAsked)
	}
	return nil
}

// send makes one re-ask upstream through rt.
func (ex *exchange) send(ctx context.Context, rt http.RoundTripper, outreq *http.Request, body []byte, kind string) (int, []byte, error) {
	var d upstreamDeadline
	ctx = d.begin(withAttempt(ctx, kind, gjson.GetBytes(body, "model").String()), ex.h.cfg.UpstreamHeaderTimeout, ex.h.cfg.UpstreamTimeout)
	defer d.end()
	req := outreq.Clone(ctx)
	rc, err := upstreamBody(ctx, body)
	if err != nil {
		return 0, nil, err
	}
	// The body is closed by the transport, and here once its answer is
	// read: a transport still sending it then (the upstream answered
	// early) fails, and reads no buffer lent again.
	defer rc.Close()
	req.Body = rc
	req.ContentLength = int64(len(body))
	req.GetBody = func() (io.ReadCloser, error) { return upstreamBody(ctx, body) }
	headerDel(req.Header, "Content-Length")
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return 0, nil, timedOut(ctx, err)
	}
	d.headersIn()
	defer resp.Body.Close()
	b, err := readLimited(resp.Body, resp.ContentLength, ex.h.cfg.MaxResponseBytes)
	if err != nil {
		return 0, nil, timedOut(ctx, err)
	}
	return resp.StatusCode, b, nil
}
