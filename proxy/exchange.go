package proxy

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/policy"
	"github.com/toolguard/toolguard/proxy/internal/wire"
	"github.com/toolguard/toolguard/validate"
)

// outcome is what toolguard did with a response, as the client is told in
// X-Toolguard-Outcome.
type outcome string

const (
	outcomeNone     outcome = "none"     // no tool calls
	outcomeValid    outcome = "valid"    // every call valid as received
	outcomeRepaired outcome = "repaired" // made valid locally
	outcomeReasked  outcome = "reasked"  // made valid by asking the model again
	outcomeFailed   outcome = "failed"   // some calls could not be made valid
	// outcomeUnchecked: some calls passed as JSON objects without a check,
	// because their tool's schema does not compile or checking them would
	// cost more than the work budget.
	outcomeUnchecked outcome = "unchecked"
)

// requestValidationSteps bounds the validation work of one request, all
// its calls and attempts together (validate.MaxSteps bounds one call's).
const requestValidationSteps = 4 * validate.MaxSteps

// exchange is one inspected chat completion: the client's request, the
// upstream attempts made for it and what became of its tool calls.
type exchange struct {
	h     *Handler
	ctx   context.Context // the client's request context
	body  []byte          // the request body as the client sent it
	tools *toolset
	pol   requestPolicy // per-tool settings, narrowed by the request's headers
	// work is the validation all of the request's calls may do together,
	// over every attempt: past it, calls pass unchecked.
	work  *validate.Budget
	model string // the model the request named, for the metrics
	start time.Time

	// What happened, for headers and logs.
	outcome        outcome
	reasks         int
	upstreamStatus int
	failure        *apiError // set when the upstream could not be reached
	calls          []*call   // every call checked, in every attempt
	gaveUp         string    // why re-asking stopped short, if it did
	fb             fallbackUse
	// tokens the upstream reported: prompt and completion of the first
	// attempt, then of the re-asks.
	tokens [4]int64
}

// noteUsage adds the usage a reply reports to the exchange's token counts.
func (ex *exchange) noteUsage(body []byte, reask bool) {
	u := gjson.GetBytes(body, "usage")
	if !u.IsObject() {
		return
	}
	i := 0
	if reask {
		i = 2
	}
	ex.tokens[i] += u.Get("prompt_tokens").Int()
	ex.tokens[i+1] += u.Get("completion_tokens").Int()
}

// exchangeFrom returns the exchange that a request to the reverse proxy is
// part of, or nil for a request passed through uninspected.
func exchangeFrom(ctx context.Context) *exchange {
	if info := requestInfoFrom(ctx); info != nil {
		return info.inspected
	}
	return nil
}

// chatCompletions inspects a chat completion if the request declares function
// tools, and passes it through otherwise.
func (h *Handler) chatCompletions(w http.ResponseWriter, r *http.Request) {
	body, err := h.readBody(w, r)
	if err != nil {
		h.refuseBody(w, r, err)
		return
	}
	pol, perr := h.requestPolicyOf(r)
	if perr != nil {
		perr.Write(w)
		return
	}
	global := pol.rules("")
	mode := global.Mode
	var tools *toolset
	if mode != policy.ModeOff {
		var ae *apiError
		if body, ae = readChatRequest(r, body, h.cfg.MaxBodyBytes); ae != nil {
			ae.Write(w)
			return
		}
		if mode.Repairs() {
			mended, edits, err := mendHistory(body)
			if err != nil {
				writeFailed(err).Write(w)
				return
			}
			if body = mended; len(edits) > 0 {
				h.log.InfoContext(r.Context(), "mended tool calls in the request's history",
					"count", len(edits), "edits", editSummary(edits[:min(len(edits), 20)]))
			}
		}
		tools = declaredTools(body)
	}
	if tools == nil {
		h.proxy(w, r, body)
		return
	}
	ex := &exchange{
		h:     h,
		ctx:   r.Context(),
		body:  body,
		tools: tools,
		pol:   pol,
		work:  validate.NewBudget(requestValidationSteps),
		model: gjson.GetBytes(body, "model").Str,
		start: time.Now(),
	}
	info := requestInfoFrom(r.Context())
	info.inspected = ex
	h.proxy(w, r, body)
	info.inspected = nil
	ex.logResult(r)
}

// firstNonSpace is the index of the first byte of b that is not JSON
// white space (len(b) if none).
func firstNonSpace(b []byte) int {
	for i, c := range b {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return i
		}
	}
	return len(b)
}

// inspect is the ReverseProxy's ModifyResponse for an exchange: it runs the
// ladder on a successful JSON reply and replaces the body if it must.
func (ex *exchange) inspect(resp *http.Response) error {
	ex.upstreamStatus = resp.StatusCode
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil
	}
	// A successful reply is judged by its body, not its label: a stream or a
	// completion served as text/plain must be checked all the same, or its
	// calls would reach the client unchecked.
	mt := resp.Header.Get("Content-Type")
	if mt != "application/json" {
		// Parsing allocates a map of parameters; the plain label, the
		// usual one, is already its own media type.
		mt, _, _ = mime.ParseMediaType(mt)
	}
	if mt == "text/event-stream" || (mt != "application/json" && looksLikeSSE(resp)) {
		if mt != "text/event-stream" {
			// Label it for what it is, so clients parse it as a stream.
			resp.Header.Set("Content-Type", "text/event-stream")
		}
		ex.stream(resp)
		return nil
	}
	raw, err := readLimited(resp.Body, resp.ContentLength, ex.h.cfg.MaxResponseBytes)
	resp.Body.Close()
	if err != nil {
		return ex.readFailure(err)
	}
	if err := wire.Strict(raw, chatResponseShape); err != nil {
		return malformedReply(err)
	}
	ex.noteUsage(raw, false)
	status, body, err := ex.run(raw, resp.Request)
	if err != nil {
		return err
	}
	if status != 0 && status != resp.StatusCode {
		resp.StatusCode = status
		resp.Status = strconv.Itoa(status) + " " + http.StatusText(status)
		resp.Header.Set("Content-Type", "application/json")
		resp.Header.Set("X-Should-Retry", "false")
	}
	setBody(resp, body)
	ex.setHeaders(resp.Header)
	return nil
}

func (ex *exchange) setHeaders(h http.Header) {
	// One backing array for the three values, where Set allocates one
	// slice each. The keys are in canonical form, as Set would make them.
	v := []string{string(ex.outcome), strconv.Itoa(ex.reasks), strconv.Itoa(ex.repairs())}
	h["X-Toolguard-Outcome"] = v[0:1:1]
	h["X-Toolguard-Reasks"] = v[1:2:2]
	h["X-Toolguard-Repairs"] = v[2:3:3]
}

// repairs counts the edits made to the calls that reached the client.
func (ex *exchange) repairs() int {
	n := 0
	for _, c := range ex.calls {
		if c.valid() {
			n += len(c.edits)
		}
	}
	return n
}

func (ex *exchange) readFailure(err error) error {
	if ex.ctx.Err() != nil {
		return err
	}
	if ae := upstreamError(ex.ctx, err); ae.Status == http.StatusGatewayTimeout {
		// TOOLGUARD_UPSTREAM_TIMEOUT fired while the body was arriving.
		return ae
	}
	return &apiError{Status: http.StatusBadGateway, Type: "upstream_error", Code: "upstream_response_unreadable",
		Msg: "the upstream's response could not be read in full (over TOOLGUARD_MAX_RESPONSE_BYTES, or cut short)", Err: err}
}

// looksLikeSSE peeks at the start of a body whose media type says neither
// JSON nor SSE, and keeps what it read for the next reader.
func looksLikeSSE(resp *http.Response) bool {
	br := bufio.NewReader(resp.Body)
	resp.Body = struct {
		io.Reader
		io.Closer
	}{br, resp.Body}
	start, _ := br.Peek(5)
	return bytes.HasPrefix(start, []byte("data:")) || bytes.HasPrefix(start, []byte(":"))
}

// readLimited reads all of r, failing past limit bytes. size is the length
// the upstream declared (-1 if unknown), a hint that sizes the buffer once
// (see readSized).
func readLimited(r io.Reader, size, limit int64) ([]byte, error) {
	b, err := readSized(io.LimitReader(r, limit+1), size, limit+1)
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("response larger than %d bytes", limit)
	}
	return b, nil
}

func setBody(resp *http.Response, b []byte) {
	resp.Body = io.NopCloser(bytes.NewReader(b))
	resp.ContentLength = int64(len(b))
	resp.Header.Set("Content-Length", strconv.Itoa(len(b)))
	resp.TransferEncoding = nil
}

func describeErrors(c *call) string {
	var b strings.Builder
	for i, d := range errorDetails(c) {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(d.Path + ": " + d.Message)
	}
	return b.String()
}
