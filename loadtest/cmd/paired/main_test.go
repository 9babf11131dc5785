package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPaired runs the command against two servers: every round reaches
// each, with the body, and the report names both and their difference.
func TestPaired(t *testing.T) {
	var got [2][]string
	servers := make([]string, 2)
	for i := range servers {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			got[i] = append(got[i], r.URL.Path+" "+string(b))
			io.WriteString(w, "{}")
		}))
		t.Cleanup(s.Close)
		servers[i] = s.URL
	}
	file := filepath.Join(t.TempDir(), "req.json")
	if err := os.WriteFile(file, []byte(`{"model":"m"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-rounds", "5", "-warm", "2", "-body-file", file, servers[0], servers[1]}, &out); err != nil {
		t.Fatal(err)
	}
	for i, reqs := range got {
		if len(reqs) != 7 || reqs[0] != `/v1/chat/completions {"model":"m"}` {
			t.Errorf("server %d got %d requests, the first %q; want 7 with the body", i, len(reqs), reqs[0])
		}
	}
	if s := out.String(); strings.Count(s, "p50 ") != 2 || !strings.Contains(s, servers[1]+" - "+servers[0]) {
		t.Errorf("report:\n%s", s)
	}
}

// TestPairedRefusesAFailure stops at an answer that is not a 200.
func TestPairedRefusesAFailure(t *testing.T) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusBadGateway)
	}))
	t.Cleanup(s.Close)
	file := filepath.Join(t.TempDir(), "req.json")
	os.WriteFile(file, []byte(`{}`), 0o600)
	err := run(context.Background(), []string{"-rounds", "1", "-warm", "0", "-body-file", file, s.URL}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "status 502") {
		t.Fatalf("err = %v, want the status named", err)
	}
}

// TestPairedUntil times an answer to its first line holding a text, and
// fails when no line does.
func TestPairedUntil(t *testing.T) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "data: {\"role\":\"assistant\"}\n\ndata: {\"content\":\"word\"}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(s.Close)
	file := filepath.Join(t.TempDir(), "req.json")
	os.WriteFile(file, []byte(`{}`), 0o600)
	for _, c := range []struct{ until, err string }{{`"content":"word`, ""}, {"absent", `no line holds "absent"`}} {
		err := run(context.Background(), []string{"-rounds", "2", "-warm", "0", "-until", c.until, "-body-file", file, s.URL}, io.Discard)
		if (err == nil) != (c.err == "") || err != nil && !strings.Contains(err.Error(), c.err) {
			t.Errorf("-until %q: err = %v, want %q", c.until, err, c.err)
		}
	}
}
