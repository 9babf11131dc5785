package proxy

import (
	"context"

	"github.com/toolguard/toolguard/proxy/internal/chat"
	"github.com/toolguard/toolguard/proxy/internal/ladder"
	"github.com/toolguard/toolguard/proxy/internal/messages"
	"github.com/toolguard/toolguard/proxy/internal/responses"
	"github.com/toolguard/toolguard/proxy/internal/wire"
	"github.com/toolguard/toolguard/repair"
)

// A format is a wire format whose replies toolguard inspects: everything
// that knows the shape of its bodies is in its package under internal/,
// behind these few functions. The ladder (internal/ladder) and the HTTP
// plumbing here are the same for every format.
type format struct {
	// name labels the format's requests in logs and metrics.
	name string
	// path is the route below the API's base URL: a fallback re-ask goes
	// to the fallback endpoint's.
	path string
	// read checks that a request body reads the same to toolguard as to
	// the upstream, and returns where its members are, found in the same
	// pass: the steps below read them there, never the body again. Its
	// error is a *wire.Error for the client. known, if not nil, reports a
	// prefix of the conversation that the history cache knows was read
	// before, which is not read again (see wire.KnownPrefix); d, if not
	// nil, remembers the tool declarations read before, which are not
	// walked again (see ladder.Declarations). rq, if it keeps templates,
	// holds the client's last requests: a body that repeats one is read as
	// it was (see wire.Templates).
	read func(body []byte, known wire.KnownPrefix, d *ladder.Declarations, rq wire.Repeats) (*wire.Members, error)
	// items names the member holding the conversation, whose items
	// Members record (for a body patched after read, wire.ReadMembers).
	items string
	// mendHistory mends the form of the calls in the conversation the
	// client sends back (or returns the body as it was), skipping a prefix
	// that the cache knows needs nothing for scope.
	mendHistory func(m *wire.Members, t *ladder.HistoryUse) ([]byte, []repair.Edit, error)
	// open reads what a request declares: its function tools and, if
	// output is set, its JSON response format; nil means nothing to inspect.
	// d is read's.
	open func(m *wire.Members, d *ladder.Declarations, output bool) request
	// uninspectable, if set, says why a request asks for a reply toolguard
	// cannot inspect (one it never sees, or calls of tools it is not shown),
	// or "". declares says whether the request declares something to
	// inspect.
	uninspectable func(m *wire.Members, declares bool) string
	// errorBody, if set, renders the errors of the format's route in its
	// API's shape; nil means the OpenAI shape.
	errorBody func(e *wire.Error) []byte
}

// request is an inspected request, as its format reads it and writes
// what follows from it.
type request interface {
	// Tools are the functions the request declares.
	Tools() *ladder.Tools
	// Model is the model the request names.
	Model() string

	// ReadReply checks that a JSON reply reads the same to toolguard as
	// to a client; its error is a *wire.Error. r reads a reply that repeats
	// the client's last (see wire.Templates).
	ReadReply(body []byte, r wire.Repeats) error
	// Usage returns the input and output tokens a reply reports.
	Usage(body []byte) (in, out int64, ok bool)
	// Turns checks the calls of a JSON reply and records them in x.
	Turns(ctx context.Context, x *ladder.Exchange, body []byte) ([]*ladder.Turn, error)
	// Write writes what the ladder made of the turns back into the first
	// reply, with the usage summed over the replies to re-asks.
	Write(first []byte, turns []*ladder.Turn, replies [][]byte) ([]byte, error)
	// SumUsage is the first reply with the usage summed over the replies.
	SumUsage(first []byte, replies [][]byte) ([]byte, error)

	// Reask writes the body of a re-ask for the turn's invalid calls,
	// naming model if it is not "".
	Reask(x *ladder.Exchange, t *ladder.Turn, attempt int, model string) ([]byte, error)
	// Answer reads the reply to a re-ask of the turn.
	Answer(t *ladder.Turn, reply []byte) (ladder.Answer, error)

	// NewStream handles the events of a streamed reply.
	NewStream(s ladder.Session, maxBytes int64) wire.Events
	// Stateful says why the request must not be re-asked ("" if it may
	// be): it continues state stored upstream that a re-ask would change.
	Stateful() string
}

// responsesFormat is the Responses API.
var responsesFormat = format{
	name:        "responses",
	path:        responses.Path,
	read:        responses.Read,
	items:       responses.Items,
	mendHistory: responses.MendHistory,
	open: func(m *wire.Members, d *ladder.Declarations, output bool) request {
		if q := responses.NewRequest(m, d, output); q != nil {
			return q
		}
		return nil
	},
	uninspectable: responses.Uninspectable,
}

// chatFormat is the Chat Completions API.
var chatFormat = format{
	name:        "chat.completions",
	path:        chat.Path,
	read:        chat.Read,
	items:       chat.Items,
	mendHistory: chat.MendHistory,
	open: func(m *wire.Members, d *ladder.Declarations, output bool) request {
		if q := chat.NewRequest(m, d, output); q != nil {
			return q
		}
		return nil
	},
}

// messagesFormat is the Anthropic Messages API.
var messagesFormat = format{
	name:        "messages",
	path:        messages.Path,
	read:        messages.Read,
	items:       messages.Items,
	mendHistory: messages.MendHistory,
	open: func(m *wire.Members, d *ladder.Declarations, output bool) request {
		if q := messages.NewRequest(m, d, output); q != nil {
			return q
		}
		return nil
	},
	errorBody: messages.ErrorBody,
}
