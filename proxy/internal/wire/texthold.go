package wire

import "time"

// The bounds of holding back streamed text that may be the start of a call
// written as text, the same for every API. What is held is bounded in bytes
// (MaxTextHold) and in time (MaxTextHoldTime, checked as events arrive):
// past either, it goes out as text.
const (
	MaxTextHold     = 16 << 10
	MaxTextHoldTime = 10 * time.Second
	// MaxTextScanned bounds the text read for holds: past it, the text
	// passes as it comes.
	MaxTextScanned = 256 << 10
	// MaxTextHoldWork bounds the bytes read for holds over all of one
	// stream's events, every choice's together: each event's hold is
	// decided on the text so far, and a stream of a million one-byte
	// events would otherwise read its text a million times. Past it, the
	// text passes as it comes.
	MaxTextHoldWork = 1 << 20
)
