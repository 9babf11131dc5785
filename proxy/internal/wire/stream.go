package wire

import (
	"bytes"
	"errors"
	"io"
	"sync"
	"time"
)

// Events is what a wire format does with the events of a stream it
// inspects (see Stream).
type Events interface {
	// MayWait reports whether handling ev may wait on the network (settle
	// calls and re-ask, or end the stream). It may err on the side of yes:
	// a wrong yes only costs a write.
	MayWait(ev []byte) bool
	// Handle acts on one whole event, writing what the client gets to out,
	// and reports when nothing more will be written. ev is the stream's
	// buffer, valid only until Handle returns: what is kept of it (an
	// event held, a string or gjson.Result read from it) must be a copy. A *Error ends the
	// stream with an error event (Fail); any other error ends it at once,
	// with nothing more written (the client is gone).
	Handle(ev []byte, out *bytes.Buffer) (done bool, err error)
	// End is told that the upstream's body ended; it returns the error for
	// a stream that ended before its end, nil for one that was whole.
	End() *Error
	// Fail writes what ends a stream on e.
	Fail(out *bytes.Buffer, e *Error)
}

// Stream replaces the body of a streamed reply. It reads the upstream's
// events and hands each to the format as soon as it is whole. It does its
// work inside Read, on the goroutine that copies the body to the client,
// so nothing outlives the response.
//
// All the whole events of a network read are handled before their output
// is returned, so they reach the client in one write, as a plain proxy
// would send them. The one exception is an event that may make the format
// wait (Events.MayWait): it is kept until the output before it has gone
// out, so no text waits for a re-ask.
type Stream struct {
	up  io.ReadCloser
	ev  Events
	max int64 // the largest event, TOOLGUARD_MAX_RESPONSE_BYTES
	// readError maps a failed network read to the error the client sees;
	// nil when the client is gone and there is nobody to tell.
	readError func(error) *Error
	// OnFail, if set, is told of every error that ends the stream.
	OnFail func(*Error)

	split Splitter
	// out is the output not yet copied to the client: pooled (outBuffers),
	// taken when an event writes and given back once the client has it all,
	// so a stream waiting on its upstream holds none.
	out  *bytes.Buffer
	eof  bool   // the upstream body is exhausted
	held []byte // an event kept back until the output before it is sent
	done bool   // nothing more will be added to out
	// ended: the format's handling came to the stream's end (its last
	// event), which the upstream's body may not have reached yet.
	ended bool
	err   error
}

var _ io.ReadCloser = (*Stream)(nil)

// NewStream reads up through ev. max bounds one event's size; readError
// maps a failed read (nil: the client is gone, end silently).
func NewStream(up io.ReadCloser, ev Events, max int64, readError func(error) *Error) *Stream {
	return &Stream{up: up, ev: ev, max: max, readError: readError}
}

// readBuffers are what the upstream's body is read into, one per read in
// progress: the Splitter keeps a copy of what was read. Pooled, as
// httputil's copy buffers are: a stream's 32 KiB would otherwise be
// garbage when it ends.
var readBuffers = sync.Pool{New: func() any {
	b := make([]byte, 32<<10)
	return &b
}}

// outBuffers hold streams' output until the client has it. Without them a
// stream's output buffer, grown to what one network read brings (a burst of
// small events, handled together), is garbage when the stream ends.
var outBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// pooledBuffer is the largest buffer given back to a pool: one grown past
// it by a large event is let go.
const pooledBuffer = 64 << 10

func (s *Stream) Read(p []byte) (int, error) {
	for s.pending() == 0 && !s.done {
		s.step()
	}
	if s.pending() > 0 {
		n, _ := s.out.Read(p)
		if s.out.Len() == 0 {
			s.releaseOut()
		}
		return n, nil
	}
	if s.err != nil {
		return 0, s.err
	}
	if s.ended && !s.eof {
		s.drain()
	}
	return 0, io.EOF
}

// A stream that ended at its last event reads the upstream's body on to
// its end, for at most drainWait and drainBytes, before the client's ends:
// over HTTP/1.1 a body closed before its end closes its connection, and
// the end (the last chunk, after "data: [DONE]") most often comes a moment
// after the last event, in a read of its own. A plain proxy copies it;
// without it the next request opens a new connection. What comes after
// the last event is not the client's.
const (
	drainWait  = 50 * time.Millisecond
	drainBytes = 64 << 10
)

// drain reads the rest of the upstream's body, within drainWait and
// drainBytes; past either the body is closed, and its connection with it.
// It reads into a buffer of its own, small: a stream waiting on its
// upstream holds none of the pooled ones, and the end of a body is a few
// bytes.
func (s *Stream) drain() {
	s.eof = true
	t := time.AfterFunc(drainWait, func() { s.up.Close() })
	defer t.Stop()
	buf := make([]byte, 512)
	for n := 0; n < drainBytes; {
		m, err := s.up.Read(buf)
		if err != nil {
			return
		}
		n += m
	}
}

// Close closes the upstream's body and gives back the output buffer, and
// the Splitter's unless part of an event was left in it; the stream reads
// nothing more.
func (s *Stream) Close() error {
	s.releaseOut()
	s.split.Release()
	if !s.done {
		s.done, s.err = true, errClosed
	}
	return s.up.Close()
}

var errClosed = errors.New("wire: read from a closed stream")

// pending is the number of output bytes the client has not yet read.
func (s *Stream) pending() int {
	if s.out == nil {
		return 0
	}
	return s.out.Len()
}

// output is where an event's handling writes, taken from the pool when the
// stream holds none.
func (s *Stream) output() *bytes.Buffer {
	if s.out == nil {
		s.out = outBuffers.Get().(*bytes.Buffer)
	}
	return s.out
}

// releaseOut gives the output buffer back, whatever it holds.
func (s *Stream) releaseOut() {
	if s.out == nil {
		return
	}
	if s.out.Cap() <= pooledBuffer {
		s.out.Reset()
		outBuffers.Put(s.out)
	}
	s.out = nil
}

// step handles the events already read, or reads more from the upstream.
func (s *Stream) step() {
	if s.held != nil && !s.done {
		ev := s.held
		s.held = nil
		s.handle(ev)
	}
	for !s.done {
		ev, ok := s.split.Next()
		if !ok {
			break
		}
		if s.pending() > 0 && s.ev.MayWait(ev) {
			s.held = append([]byte(nil), ev...)
			break
		}
		s.handle(ev)
	}
	// The Splitter's buffer goes back to its pool unless bytes are left in
	// it (part of an event, or events after one held, which is a copy), and
	// the output's unless the events wrote to it (a format holding them back
	// writes nothing): a stream waiting on its upstream holds neither.
	s.split.Release()
	if s.pending() == 0 {
		s.releaseOut()
	}
	if s.done || s.pending() > 0 {
		return
	}
	if s.eof {
		if ae := s.ev.End(); ae != nil {
			s.fail(ae)
		}
		s.done = true
		return
	}
	if int64(s.split.Buffered()) > s.max {
		// Every whole event has been handled: what is left is part of
		// one. (Checked before reading, not after: one read can bring
		// many small events.)
		s.fail(&Error{Type: "upstream_error", Code: "upstream_event_too_large",
			Msg: "an upstream event is larger than TOOLGUARD_MAX_RESPONSE_BYTES"})
		return
	}
	buf := readBuffers.Get().(*[]byte)
	n, err := s.up.Read(*buf)
	s.split.Feed((*buf)[:n])
	readBuffers.Put(buf)
	switch {
	case err == io.EOF:
		s.eof = true
		s.split.End()
	case err != nil:
		ae := s.readError(err)
		if ae == nil {
			s.done, s.err = true, err
			return
		}
		s.fail(&Error{Type: ae.Type, Code: ae.Code, Msg: "the upstream's stream broke off: " + ae.Msg, Err: err})
	}
}

func (s *Stream) handle(ev []byte) {
	done, err := s.ev.Handle(ev, s.output())
	if err != nil {
		if ae, ok := err.(*Error); ok {
			s.fail(ae)
			return
		}
		s.done, s.err = true, err
		return
	}
	s.done, s.ended = done, done
}

func (s *Stream) fail(ae *Error) {
	if s.OnFail != nil {
		s.OnFail(ae)
	}
	s.ev.Fail(s.output(), ae)
	s.done = true
}

// BOMAtLineStart reports whether a line of an event starts with a UTF-8
// byte order mark. The specification's decoder drops one at the start of
// the stream, openai-node's at the start of every line, openai-python and
// openai-go nowhere: a line such as "\ufeffdata: ..." is data to some
// clients and an unknown field to others.
func BOMAtLineStart(ev []byte) bool {
	for at := 0; ; {
		i := bytes.Index(ev[at:], bom)
		if i < 0 {
			return false
		}
		i += at
		if i == 0 || ev[i-1] == '\n' || ev[i-1] == '\r' {
			return true
		}
		at = i + len(bom)
	}
}

var bom = []byte("\xef\xbb\xbf")

// WriteData writes data as one event. JSON holds line breaks only as white
// space (a chunk rewritten from a multi-line data event keeps them), and a
// client would end the data line at one: each line goes out as a data line
// of its own, which clients join with "\n" again.
func WriteData(out *bytes.Buffer, data []byte) {
	for {
		i := lineEnd(data)
		if i < 0 {
			break
		}
		if i > 0 {
			out.WriteString("data: ")
			out.Write(data[:i])
			out.WriteByte('\n')
		}
		data = data[i+1:]
	}
	out.WriteString("data: ")
	out.Write(data)
	out.WriteString("\n\n")
}

// Ending is how a format's handling of a stream ends, for its Handle to
// report: Done once nothing more will be written; Failure, the error that
// ends it with an error event; Abort, the error that ends it silently (the
// client is gone).
type Ending struct {
	Done    bool
	Failure *Error
	Abort   error
}

// Result is what Handle returns for e.
func (e *Ending) Result() (bool, error) {
	switch {
	case e.Failure != nil:
		return true, e.Failure
	case e.Abort != nil:
		return true, e.Abort
	}
	return e.Done, nil
}
