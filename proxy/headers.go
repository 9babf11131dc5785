package proxy

import "net/http"

// toolguard reads and writes the headers it names through the functions
// below, which index the header map directly. http.Header's methods put
// the name in canonical form on every call (some 400 instructions for a
// name of 20 bytes, and a request made about 25 such calls); net/http has
// already put the names of what it read in that form, and the names
// toolguard uses are constants written in it.
//
// A name in another form would never match: a check that reads it would
// pass what it should refuse. TestHeaderNamesAreCanonical holds every call
// in this package to a constant name in canonical form.

// headerGet is h.Get(name), for a name in canonical form.
func headerGet(h http.Header, name string) string {
	if v := h[name]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// headerValues is h.Values(name), for a name in canonical form.
func headerValues(h http.Header, name string) []string { return h[name] }

// headerSet is h.Set(name, v), for a name in canonical form.
func headerSet(h http.Header, name, v string) { h[name] = []string{v} }

// headerSetIn is headerSet with v kept in room, which the caller owns as
// long as h holds it: no slice of its own for the value.
func headerSetIn(h http.Header, name string, room *[1]string, v string) {
	room[0] = v
	h[name] = room[:]
}

// headerDel is h.Del(name), for a name in canonical form.
func headerDel(h http.Header, name string) { delete(h, name) }
