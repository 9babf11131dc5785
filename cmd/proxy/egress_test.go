package main

import (
	"bufio"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestMain lets a test run toolguard as a process of its own (the test
// binary, re-executed), for what Go reads once per process: the system's
// certificate pool (SSL_CERT_FILE, SSL_CERT_DIR) and the proxy settings
// (HTTPS_PROXY, NO_PROXY).
func TestMain(m *testing.M) {
	if os.Getenv("RUN_TOOLGUARD_MAIN") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// startProcess runs toolguard in a process of its own with env and returns
// its address once its start-up line says it listens.
func startProcess(t *testing.T, env ...string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), append([]string{"RUN_TOOLGUARD_MAIN=1", "TOOLGUARD_LISTEN_ADDR=127.0.0.1:0", "TOOLGUARD_LOG_LEVEL=info", "TOOLGUARD_DRAIN_DELAY=0s"}, env...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	})
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, `"msg":"toolguard listening"`) {
			continue
		}
		go io.Copy(io.Discard, stderr) // keep the pipe drained
		var v struct{ Addr string }
		if err := json.Unmarshal([]byte(line), &v); err != nil || v.Addr == "" {
			t.Fatalf("start-up line without an address: %s", line)
		}
		return v.Addr
	}
	t.Fatalf("toolguard exited before listening: %v", sc.Err())
	return ""
}

// caFile writes the certificate of a TLS test server to a PEM file.
func caFile(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ca.pem")
	b := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestCustomCertificateAuthority: SSL_CERT_FILE makes toolguard trust an
// upstream whose certificate a private CA signed; without it, the failure
// is a TLS error that says so.
func TestCustomCertificateAuthority(t *testing.T) {
	up := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[]}`)
	}))
	defer up.Close()
	trusting := startProcess(t, "TOOLGUARD_UPSTREAM_URL="+up.URL+"/v1", "SSL_CERT_FILE="+caFile(t, up))
	if status, body := get(t, "http://"+trusting+"/v1/models"); status != 200 {
		t.Errorf("with SSL_CERT_FILE: %d %s", status, body)
	}
	plain := startProcess(t, "TOOLGUARD_UPSTREAM_URL="+up.URL+"/v1", "SSL_CERT_FILE=", "SSL_CERT_DIR="+t.TempDir())
	if status, body := get(t, "http://"+plain+"/v1/models"); status != 502 || !strings.Contains(body, "upstream_tls_error") {
		t.Errorf("without it: %d %s", status, body)
	}
}

// TestEgressProxy: HTTPS_PROXY sends the upstream traffic through a
// forward proxy (CONNECT), which reaches the upstream by the name in
// TOOLGUARD_UPSTREAM_URL.
func TestEgressProxy(t *testing.T) {
	up := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[]}`)
	}))
	defer up.Close()
	var mu sync.Mutex
	var connects []string
	fwd := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodConnect {
			http.Error(w, "CONNECT only", http.StatusMethodNotAllowed)
			return
		}
		mu.Lock()
		connects = append(connects, r.Host)
		mu.Unlock()
		// Whatever host is asked for, tunnel to the test upstream: no
		// traffic leaves the machine.
		dst, err := net.Dial("tcp", strings.TrimPrefix(up.URL, "https://"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			dst.Close()
			return
		}
		fmt.Fprint(rw, "HTTP/1.1 200 Connection established\r\n\r\n")
		rw.Flush()
		go func() { io.Copy(dst, rw); dst.Close() }()
		io.Copy(conn, bufio.NewReader(dst))
		conn.Close()
	}))
	defer fwd.Close()
	// example.com is a name the test server's certificate holds.
	addr := startProcess(t, "TOOLGUARD_UPSTREAM_URL=https://example.com/v1", "SSL_CERT_FILE="+caFile(t, up), "HTTPS_PROXY="+fwd.URL)
	if status, body := get(t, "http://"+addr+"/v1/models"); status != 200 {
		t.Errorf("through the proxy: %d %s", status, body)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(connects) == 0 || connects[0] != "example.com:443" {
		t.Errorf("the proxy saw CONNECT %q, want example.com:443", connects)
	}
}

// TestNoProxy: a host NO_PROXY names is reached directly, others through
// HTTP_PROXY. (0.0.0.0 reaches this machine and, unlike loopback names,
// which Go never proxies, is subject to the proxy settings.)
func TestNoProxy(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[],"via":"direct"}`)
	}))
	defer up.Close()
	fwd := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[],"via":"proxy"}`)
	}))
	defer fwd.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(up.URL, "http://"))
	upstream := "TOOLGUARD_UPSTREAM_URL=http://0.0.0.0:" + port + "/v1"
	for _, tt := range []struct {
		noProxy, want string
	}{{"", "proxy"}, {"0.0.0.0", "direct"}} {
		addr := startProcess(t, upstream, "HTTP_PROXY="+fwd.URL, "NO_PROXY="+tt.noProxy)
		if _, body := get(t, "http://"+addr+"/v1/models"); !strings.Contains(body, `"via":"`+tt.want+`"`) {
			t.Errorf("NO_PROXY=%q: %s, want %s", tt.noProxy, body, tt.want)
		}
	}
}

// TestCustomCertificateDirectory: SSL_CERT_DIR replaces the system's
// certificate directories.
func TestCustomCertificateDirectory(t *testing.T) {
	up := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[]}`)
	}))
	defer up.Close()
	dir := filepath.Dir(caFile(t, up))
	addr := startProcess(t, "TOOLGUARD_UPSTREAM_URL="+up.URL+"/v1", "SSL_CERT_DIR="+dir, "SSL_CERT_FILE="+filepath.Join(dir, "none.pem"))
	if status, body := get(t, "http://"+addr+"/v1/models"); status != 200 {
		t.Errorf("with SSL_CERT_DIR: %d %s", status, body)
	}
}
