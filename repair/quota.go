package repair

import (
	"fmt"
	"sync"
)

// The JSON repairer copies all it has written each time it moves or inserts
// a comma, a colon or a quote, so its work grows with the square of the text
// it is handed: 32 KiB of array items without commas allocated 1.3 GB and
// took 1.8 s, 131 KB took minutes. It is therefore handed at most
// maxRepairBytes of text at a time, and a Quota bounds the sum of the
// squares of the lengths it is handed for one request. Text over either
// bound is not mended: a call is checked as it is and re-asked, a call in
// the history goes as the client sent it, a call written as text stays
// text. Everything else the syntax step does (fences, tokens, prose,
// encodings, splitting values) is linear and unbounded by these.
const (
	// maxRepairBytes is the most text handed to the repairer at once: far
	// beyond the arguments a model gets wrong in practice (BFCL's largest
	// are a few hundred bytes), and at most about 0.2 s of repair in the
	// costliest shape measured.
	maxRepairBytes = 8 << 10
	// QuotaWork is the work a Quota allows: the squares of the lengths
	// handed to the repairer, summed. One call of maxRepairBytes takes it
	// all; so do 64 calls of 1 KiB.
	QuotaWork = maxRepairBytes * maxRepairBytes
)

// A Quota is the JSON repair work one request may do, shared by its calls
// (see QuotaWork). A nil Quota bounds each text alone, by maxRepairBytes.
// It is safe for concurrent use.
type Quota struct {
	mu   sync.Mutex
	left int64
}

// NewQuota returns a Quota of QuotaWork.
func NewQuota() *Quota { return &Quota{left: QuotaWork} }

// take draws the work of repairing n bytes, or reports why it may not.
func (q *Quota) take(n int) error {
	if n > maxRepairBytes {
		return fmt.Errorf("arguments are %d bytes of malformed JSON, more than the %d that are repaired", n, maxRepairBytes)
	}
	if q == nil {
		return nil
	}
	w := int64(n) * int64(n)
	q.mu.Lock()
	defer q.mu.Unlock()
	if w > q.left {
		return fmt.Errorf("the request's JSON repair work is spent: %d bytes of malformed JSON are not repaired", n)
	}
	q.left -= w
	return nil
}
