package chat

import (
	"strconv"
	"strings"
	"time"
	"unicode"
	"unsafe"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
	"github.com/toolguard/toolguard/proxy/internal/wire"
)

// Calls written as text in a stream. Content is never delayed unless it
// may be the start of a call: from a recognised marker (or a leading { or
// [ when bare calls are read), it is held, and released as text the moment
// it cannot be one (ladder.Exchange.TextCallHold). What is held is bounded
// (wire.MaxTextHold and the rest). At the choice's end, the whole content
// is read for calls; those found go out as real calls.

// textHold updates what of a choice's content may go to the client, writes
// the text released, and reports whether the content of the event being
// handled must be taken out of it (it is held, or was released as part of
// a chunk of toolguard's).
func (r *stream) textHold(sc *streamChoice) bool {
	content := sc.content
	r.holdWork += len(content)
	if len(sc.order) > 0 || len(content) > wire.MaxTextScanned || r.holdWork > wire.MaxTextHoldWork {
		// Real calls, or too much text to read: the text passes.
		return r.releaseText(sc)
	}
	// Read in place: a copy of the whole content so far for every event
	// would cost the square of the content's length. TextCallHold keeps
	// nothing of it.
	hold := r.X.TextCallHold(unsafe.String(unsafe.SliceData(content), len(content)))
	if hold < sc.emitted {
		hold = sc.emitted
	}
	if hold == len(content) {
		if !sc.holding {
			sc.emitted = len(content)
			return false // nothing held: the event goes out as it came
		}
		return r.releaseText(sc)
	}
	if !sc.holding {
		sc.holding, sc.holdSince = true, time.Now()
	}
	if len(content)-hold > wire.MaxTextHold || time.Since(sc.holdSince) > wire.MaxTextHoldTime {
		return r.releaseText(sc)
	}
	r.writeText(sc, string(content[sc.emitted:hold]))
	sc.emitted = hold
	return true
}

// releaseText sends what is held of a choice's content, and reports
// whether the event being handled must lose its content (it went out in
// the text released).
func (r *stream) releaseText(sc *streamChoice) bool {
	if !sc.holding {
		sc.emitted = len(sc.content)
		return false
	}
	r.writeText(sc, string(sc.content[sc.emitted:]))
	sc.emitted, sc.holding = len(sc.content), false
	return true
}

// writeText sends text as a content chunk of toolguard's.
func (r *stream) writeText(sc *streamChoice, text string) {
	if text == "" {
		return
	}
	chunk, err := sjson.SetRawBytes(append([]byte(nil), r.template...), "choices",
		[]byte(`[{"index":`+strconv.FormatInt(sc.index, 10)+`,"delta":{"content":`+wire.Quote(text)+`},"finish_reason":null}]`))
	if err != nil {
		r.fail(wire.WriteFailed(err), err)
		return
	}
	wire.WriteData(r.out, chunk)
}

// settleText reads the calls written in a finished choice's content and,
// if there are any, makes them the choice's calls and settles them; the
// text around them goes out as content. It reports whether it did.
func (r *stream) settleText(sc *streamChoice) bool {
	if !sc.sawContent || len(sc.content) > wire.MaxTextScanned {
		r.releaseText(sc)
		return false
	}
	found := r.X.ReadTextCalls(string(sc.content), int(sc.index))
	if found.Sent == nil {
		r.releaseText(sc)
		return false
	}
	if found.Start < sc.emitted {
		// Part of a call has gone out as text: it stays text.
		r.releaseText(sc)
		return false
	}
	r.unholdContent(sc)
	from := sc.emitted
	if r.output != nil {
		// The content was held whole for the response format.
		from = 0
	}
	r.writeText(sc, strings.TrimRightFunc(string(sc.content[from:found.Start]), unicode.IsSpace))
	if after := strings.TrimSpace(string(sc.content[found.End:])); after != "" {
		r.writeText(sc, "\n"+after)
	}
	sc.emitted = len(sc.content)
	sc.converted = true
	for i, s := range found.Sent {
		p := &partialCall{index: int64(i), id: s.ID, name: s.Name, args: []byte(gjson.Parse(s.Args).Str), edits: s.Edits, unread: s.Unread, synthesize: true}
		sc.partials[int64(i)] = p
		sc.order = append(sc.order, int64(i))
	}
	sc.synthesize = true
	r.anyCalls = true
	r.settle(sc)
	return sc.released > 0
}
