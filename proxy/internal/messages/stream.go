package messages

import (
	"bytes"
	"net/http"

	"github.com/toolguard/toolguard/proxy/internal/ladder"
	"github.com/toolguard/toolguard/proxy/internal/wire"
)

// NewStream handles a streamed reply. Streams are not inspected yet: a
// streamed request is refused before it goes upstream (Uninspectable), and
// a stream sent to a request that did not ask for one ends at once with an
// error event rather than reaching the client unchecked.
func (q *Request) NewStream(s ladder.Session, maxBytes int64) wire.Events { return refusedStream{} }

type refusedStream struct{}

var errStream = &wire.Error{Status: http.StatusBadGateway, Type: "upstream_error", Code: "stream_not_inspected",
	Msg: "the upstream streamed a Messages reply, which toolguard does not inspect yet, so its tool calls cannot be checked"}

func (refusedStream) MayWait([]byte) bool { return false }

func (refusedStream) Handle([]byte, *bytes.Buffer) (bool, error) { return true, errStream }

func (refusedStream) End() *wire.Error { return errStream }

// Fail writes the error event Anthropic's stream parsers read.
func (refusedStream) Fail(out *bytes.Buffer, e *wire.Error) {
	out.WriteString("event: error\ndata: ")
	out.Write(ErrorBody(e))
	out.WriteString("\n\n")
}
