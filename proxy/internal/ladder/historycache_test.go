package ladder

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/proxy/internal/wire"
)

// conversation is a body whose "items" array holds calls ({"args": ...}):
// args are the raw JSON values of their arguments.
func conversation(args ...string) []byte {
	items := make([]string, len(args))
	for i, a := range args {
		items[i] = `{"n":` + fmt.Sprint(i) + `,"args":` + a + `}`
	}
	return []byte(`{"model":"m","items":[` + strings.Join(items, ",") + `]}`)
}

// mendCounted mends body's items through c, and returns the body, the
// number of edits and the items handed over.
func mendCounted(t *testing.T, body []byte, c *HistoryCache, scope string) (string, int, int) {
	t.Helper()
	out, edits, seen, _ := mend(t, body, c, scope, false)
	return out, edits, seen
}

// mendKnown is mendCounted with the strict reading told what the cache
// knows (see HistoryUse.Known); it also returns the length of the prefix the
// reading skipped.
func mendKnown(t *testing.T, body []byte, c *HistoryCache, scope string) (string, int, int, int) {
	t.Helper()
	return mend(t, body, c, scope, true)
}

func mend(t *testing.T, body []byte, c *HistoryCache, scope string, known bool) (string, int, int, int) {
	t.Helper()
	seen := 0
	turn := c.Use(c.Scope(scope))
	var kp wire.KnownPrefix
	if known {
		kp = turn.KnownPrefix()
	}
	m := wire.NewMembers("items")
	defer m.Release()
	if err := wire.StrictMembersKnown(body, nil, m, kp, nil); err != nil {
		t.Fatal(err)
	}
	out, edits, err := MendHistory(m, turn, func(m *HistoryMender, item gjson.Result) {
		seen++
		m.Call(item.Get("args"), item)
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return string(out), len(edits), seen, m.Known()
}

const (
	goodArgs = `"{\"selector\":\"#a\"}"`
	badArgs  = `"{\"selector\": \"#b\""` // truncated: mended
)

// TestHistoryCacheSkipsAKnownPrefix: a conversation sent again with new
// items is walked only from the first new item, and what comes out is what
// a walk of the whole conversation makes of it.
func TestHistoryCacheSkipsAKnownPrefix(t *testing.T) {
	c := NewHistoryCache()
	turn1 := conversation(goodArgs, goodArgs, goodArgs)
	if out, _, seen := mendCounted(t, turn1, c, "k1"); out != string(turn1) || seen != 3 {
		t.Fatalf("first turn: %d items walked, body changed: %v", seen, out != string(turn1))
	}
	turn2 := conversation(goodArgs, goodArgs, goodArgs, goodArgs, badArgs)
	want, wantEdits, _ := mendCounted(t, turn2, nil, "")
	out, edits, seen := mendCounted(t, turn2, c, "k1")
	if seen != 2 {
		t.Errorf("second turn: %d items walked, want the 2 new ones", seen)
	}
	if out != want || edits != wantEdits || edits == 0 {
		t.Errorf("second turn mended differently with the cache (%d edits, want %d):\n%s\nwant\n%s", edits, wantEdits, out, want)
	}
	// The mended call is not remembered as needing nothing: sent again, it
	// is mended again.
	for range 2 {
		out, edits, seen = mendCounted(t, turn2, c, "k1")
		if out != want || edits != wantEdits || seen != 1 {
			t.Errorf("third turn: %d items walked (want 1), %d edits (want %d)", seen, edits, wantEdits)
		}
	}
}

// TestHistoryCacheIsPerScope: another client (another scope) learns
// nothing from what one client's conversations left in the cache.
func TestHistoryCacheIsPerScope(t *testing.T) {
	c := NewHistoryCache()
	body := conversation(goodArgs, goodArgs, goodArgs)
	mendCounted(t, body, c, "client-a")
	if _, _, seen := mendCounted(t, body, c, "client-b"); seen != 3 {
		t.Errorf("another scope walked %d of 3 items: it used the first one's verdict", seen)
	}
	if _, _, seen := mendCounted(t, body, c, "client-a"); seen != 0 {
		t.Errorf("the same scope walked %d items of a conversation it sent before", seen)
	}
	// A prefix that differs in one byte is not the same prefix.
	other := []byte(strings.Replace(string(body), `"n":0`, `"n":7`, 1))
	if _, _, seen := mendCounted(t, other, c, "client-a"); seen != 3 {
		t.Errorf("a changed first item: %d of 3 items walked", seen)
	}
}

// TestHistoryCacheIsBounded: however many conversations go through it, the
// cache holds at most HistoryCacheEntries keys, the oldest forgotten first.
func TestHistoryCacheIsBounded(t *testing.T) {
	c := NewHistoryCache()
	first := conversation(goodArgs)
	mendCounted(t, first, c, "s")
	for i := range HistoryCacheEntries + 100 {
		mendCounted(t, conversation(goodArgs, fmt.Sprintf(`"{\"i\":%d}"`, i)), c, "s")
		if n := c.Len(); n > HistoryCacheEntries {
			t.Fatalf("%d entries after %d conversations, bound %d", n, i+2, HistoryCacheEntries)
		}
	}
	if n := c.Len(); n != HistoryCacheEntries {
		t.Errorf("%d entries, want the bound %d", n, HistoryCacheEntries)
	}
	if _, _, seen := mendCounted(t, first, c, "s"); seen != 1 {
		t.Errorf("the oldest conversation is still remembered")
	}
}

// TestHistoryCacheLeavesLongConversations: a conversation of more than
// wire.MaxItems items is mended without the cache (the offsets a request
// keeps stay bounded), the same as with it.
func TestHistoryCacheLeavesLongConversations(t *testing.T) {
	args := make([]string, wire.MaxItems+1)
	for i := range args {
		args[i] = goodArgs
	}
	args[len(args)-1] = badArgs
	body := conversation(args...)
	c := NewHistoryCache()
	want, wantEdits, _ := mendCounted(t, body, nil, "")
	for range 2 {
		out, edits, seen := mendCounted(t, body, c, "s")
		if out != want || edits != wantEdits || seen != len(args) {
			t.Fatalf("%d of %d items walked, %d edits (want %d)", seen, len(args), edits, wantEdits)
		}
	}
	if c.Len() != 0 {
		t.Errorf("%d entries for a conversation past the bound", c.Len())
	}
}

// goods is n calls that need nothing.
func goods(n int) []string {
	args := make([]string, n)
	for i := range args {
		args[i] = goodArgs
	}
	return args
}

// itemsPrefix is the length of body's items up to the end of the last,
// from their '['.
func itemsPrefix(body []byte) int {
	return bytes.LastIndexByte(body, ']') - bytes.IndexByte(body, '[')
}

// TestHistoryCacheKnowsTheLastTurn: the next turn of a conversation is
// read strictly and mended only from its new items, with the result of a
// reading and mending of all of them; another scope, and a conversation
// too short to be worth it, are read in full.
func TestHistoryCacheKnowsTheLastTurn(t *testing.T) {
	c := NewHistoryCache()
	turn1 := conversation(goods(30)...)
	if itemsPrefix(turn1) < minKnown {
		t.Fatalf("the first turn's items are %d bytes, under %d", itemsPrefix(turn1), minKnown)
	}
	if _, _, seen, known := mendKnown(t, turn1, c, "a"); seen != 30 || known != 0 {
		t.Fatalf("first turn: %d items walked, %d bytes known", seen, known)
	}
	turn2 := conversation(append(goods(31), badArgs)...)
	want, wantEdits, _ := mendCounted(t, turn2, nil, "")
	if _, _, _, known := mendKnown(t, turn2, c, "b"); known != 0 {
		t.Errorf("another scope: %d bytes known", known)
	}
	out, edits, seen, known := mendKnown(t, turn2, c, "a")
	if known != itemsPrefix(turn1) || seen != 2 {
		t.Errorf("next turn: %d bytes known (want %d), %d items walked (want the 2 new)", known, itemsPrefix(turn1), seen)
	}
	if out != want || edits != wantEdits || edits == 0 {
		t.Errorf("next turn mended differently (%d edits, want %d)", edits, wantEdits)
	}
	// Sent again, it is known up to the call that needed mending, which is
	// mended again.
	out, edits, seen, known = mendKnown(t, turn2, c, "a")
	if known <= itemsPrefix(turn1) || seen != 1 || out != want || edits != wantEdits {
		t.Errorf("the turn again: %d bytes known, %d items walked, %d edits", known, seen, edits)
	}
	short := conversation(goods(2)...)
	mendKnown(t, short, c, "a")
	if _, _, _, known := mendKnown(t, short, c, "a"); known != 0 {
		t.Errorf("a conversation of %d bytes: %d known", len(short), known)
	}
}

// TestHistoryCacheRecentIsBounded: the prefixes kept for the strict
// reading are at most RecentPrefixes per scope and RecentScopes scopes, the
// oldest forgotten first.
func TestHistoryCacheRecentIsBounded(t *testing.T) {
	c := NewHistoryCache()
	conv := func(i int) []byte {
		return conversation(append(goods(30), fmt.Sprintf(`"{\"i\":%d}"`, i))...)
	}
	next := func(i int) []byte {
		return conversation(append(goods(30), fmt.Sprintf(`"{\"i\":%d}"`, i), goodArgs)...)
	}
	for i := range RecentPrefixes + 1 {
		mendKnown(t, conv(i), c, "s")
	}
	if _, _, _, known := mendKnown(t, next(0), c, "s"); known != 0 {
		t.Errorf("the oldest of %d conversations of a scope is still known", RecentPrefixes+1)
	}
	if _, _, _, known := mendKnown(t, next(RecentPrefixes), c, "s"); known == 0 {
		t.Errorf("the newest conversation of a scope is not known")
	}
	for i := range RecentScopes {
		mendKnown(t, conv(0), c, fmt.Sprint("scope ", i))
	}
	c.mu.Lock()
	scopes := len(c.recent)
	c.mu.Unlock()
	if scopes != RecentScopes {
		t.Errorf("%d scopes kept, bound %d", scopes, RecentScopes)
	}
	if _, _, _, known := mendKnown(t, next(RecentPrefixes), c, "s"); known != 0 {
		t.Errorf("the oldest scope is still known")
	}
	if _, _, _, known := mendKnown(t, next(0), c, fmt.Sprint("scope ", RecentScopes-1)); known == 0 {
		t.Errorf("the newest scope is not known")
	}
}

// TestSeenHoldsEveryKey: the filter in front of the set never says a key
// the set holds is missing, as keys come and the oldest go, nor after its
// counters saturate (three hundred keys on the same two counters); and it
// lets few missing keys through to the set.
func TestSeenHoldsEveryKey(t *testing.T) {
	c := NewHistoryCache()
	check := func() {
		t.Helper()
		for k := range c.set {
			if !c.seen.may(k) {
				t.Fatalf("key %+v is in the set, the filter says it is not", k)
			}
		}
	}
	// Three hundred and one keys on the same two counters (their sums
	// differ only in bits neither counter's place reads), then enough
	// others to push out the first three hundred: the last must still be
	// found.
	same := func(v uint64) prefixKey { return prefixKey{sum: 0x1234_0000_5678 | v<<16} }
	for v := range uint64(301) {
		c.add(same(v))
	}
	if i, j := c.seen.at(same(0)); c.seen[i] != math.MaxUint8 || c.seen[j] != math.MaxUint8 {
		t.Fatalf("counters %d, %d: not saturated", c.seen[i], c.seen[j])
	}
	r := rand.New(rand.NewPCG(1, 1))
	for range HistoryCacheEntries - 1 {
		c.add(prefixKey{sum: r.Uint64(), n: 1})
	}
	if _, ok := c.set[same(0)]; ok {
		t.Fatal("the oldest key was not pushed out")
	}
	if _, ok := c.set[same(300)]; !ok {
		t.Fatal("the newest key on the saturated counters was pushed out")
	}
	check()
	for v := range uint64(3 * HistoryCacheEntries) {
		c.add(prefixKey{sum: r.Uint64(), n: int(v % 5000)})
		if v%1000 == 0 {
			check()
		}
	}
	check()
	if len(c.set) != HistoryCacheEntries {
		t.Fatalf("the set holds %d keys", len(c.set))
	}
	// Keys never added, of random sums as a seeded hash gives them: about
	// one in sixteen passes the filter (a quarter of the counters are
	// taken, and a key has two).
	through := 0
	r = rand.New(rand.NewPCG(1, 2))
	for range 100_000 {
		if c.seen.may(prefixKey{sum: r.Uint64(), n: 7}) {
			through++
		}
	}
	if through > 10_000 {
		t.Errorf("%d of 100,000 keys never added pass the filter", through)
	}
	t.Logf("%d of 100,000 keys never added pass the filter", through)
}
