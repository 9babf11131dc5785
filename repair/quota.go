package repair

import (
	"fmt"
	"sync"
	"unicode/utf8"
)

// The JSON repairer copies all it has written each time it moves or inserts
// a comma, a colon or a quote, so its work grows with the square of the text
// it is handed: 32 KiB of array items without commas allocated 1.3 GB and
// took 1.8 s, 131 KB took minutes. Quotes make it worse: at a quote inside a
// string it copies the string, and a string that never ends is read again
// from each quote in it, so text dense with quotes costs the cube of its
// length ('a'a'a…: 1.2 KB allocated 335 MB, 4.8 KB took 6.4 s and allocated
// 21 GB). So do brackets: it copies what it has written as it closes each
// (400 levels deep allocated 10 bytes for each byte squared).
//
// It is therefore handed at most maxRepairBytes of text at a time, nested at
// most maxNesting deep, and each text is charged its work (repairWork),
// drawn from the request's Quota; a text whose work alone is over a Quota's
// is not handed over either. Text over any bound is not mended: a call is
// checked as it is and re-asked, a call in the history goes as the client
// sent it, a call written as text stays text. Everything else the syntax
// step does (fences, tokens, prose, encodings, splitting values) is linear
// and unbounded by these.
const (
	// maxRepairBytes is the most text handed to the repairer at once: far
	// beyond the arguments a model gets wrong in practice (BFCL's largest
	// are a few hundred bytes).
	maxRepairBytes = 8 << 10
	// QuotaWork is the work a Quota allows, summed over the texts handed
	// to the repairer: about that of 8 KiB with few quotes or brackets, or
	// of 64 texts of 1 KiB. The repairer allocates at most about 2 bytes
	// for each unit of work in every shape measured (FuzzSyntaxCost fails
	// over 3), and a Quota's worth of the costliest shapes measured takes
	// 30-60 ms and 80 MB (BenchmarkQuota).
	QuotaWork = maxRepairBytes * maxRepairBytes
	// minRepairWork is the least a text is charged, for what a repair
	// costs whatever its length (a few microseconds): a Quota allows at
	// most 4,096 repairs.
	minRepairWork = QuotaWork / 4096
)

// repairWork is the work of handing t to the repairer: n² for its n bytes,
// plus n·q² for its q quotes of any kind the repairer reads as quotes, plus
// 32n for each bracket it opens (up to maxNesting), and at least
// minRepairWork. The arguments of BFCL's calls cost at most 2% of a Quota;
// text dense with quotes costs about the cube of its length, as it does the
// repairer.
func repairWork(t []byte) int64 {
	var q, b int64
	for i := 0; i < len(t); {
		r, size := utf8.DecodeRune(t[i:])
		switch r {
		case '"', '\'', '`', '\u00b4', '\u2018', '\u2019', '\u201c', '\u201d':
			q++
		case '[', '{':
			b++
		}
		i += size
	}
	n := int64(len(t))
	return max(n*(n+q*q+32*min(b, maxNesting)), minRepairWork)
}

// A Quota is the JSON repair work one request may do, shared by its calls
// (see QuotaWork). Its zero value is a whole Quota, ready to use; a nil
// Quota bounds each text alone, by QuotaWork. It is safe for concurrent
// use.
type Quota struct {
	mu    sync.Mutex
	spent int64
}

// NewQuota returns a Quota of QuotaWork.
func NewQuota() *Quota { return new(Quota) }

// take draws the work of repairing t, or reports why it may not.
func (q *Quota) take(t []byte) error {
	n := len(t)
	if n > maxRepairBytes {
		return fmt.Errorf("arguments are %d bytes of malformed JSON, more than the %d that are repaired", n, maxRepairBytes)
	}
	w := repairWork(t)
	if w > QuotaWork {
		return fmt.Errorf("arguments are %d bytes of malformed JSON too costly to repair: too many quotes or brackets", n)
	}
	if q == nil {
		return nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if w > QuotaWork-q.spent {
		return fmt.Errorf("the request's JSON repair work is spent: %d bytes of malformed JSON are not repaired", n)
	}
	q.spent += w
	return nil
}
