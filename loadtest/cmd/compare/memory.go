package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// memResult is the memory check: toolguard's RSS with n streams open.
type memResult struct {
	streams, opened int
	idle, rss, hwm  int64
	openTime        time.Duration
}

// openStreams opens n streaming requests to url at once and keeps them
// reading until every one has had its first content event (or 90 s pass),
// then samples the RSS of pid for 2 s and closes them all.
func openStreams(ctx context.Context, url, body string, headers map[string]string, n, pid int) (memResult, error) {
	res := memResult{streams: n}
	var err error
	if res.idle, _, err = vmRSS(pid); err != nil {
		return res, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	tr := &http.Transport{MaxIdleConnsPerHost: n, DisableCompression: true}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	var opened atomic.Int64
	all := make(chan struct{})
	var wg sync.WaitGroup
	start := time.Now()
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
			if err != nil {
				return
			}
			req.Header.Set("Content-Type", "application/json")
			for k, v := range headers {
				req.Header.Set(k, v)
			}
			resp, err := c.Do(req)
			if err != nil {
				return
			}
			defer resp.Body.Close()
			br := bufio.NewReader(resp.Body)
			for {
				line, err := br.ReadSlice('\n')
				if strings.Contains(string(line), `"content":"word`) {
					if opened.Add(1) == int64(n) {
						close(all)
					}
					break
				}
				if err != nil && err != bufio.ErrBufferFull {
					return
				}
			}
			// Keep reading, as a client would, until the check ends.
			io.Copy(io.Discard, resp.Body)
		}()
	}
	select {
	case <-all:
	case <-time.After(90 * time.Second):
	case <-ctx.Done():
	}
	res.openTime = time.Since(start)
	res.opened = int(opened.Load())
	for range 4 {
		time.Sleep(500 * time.Millisecond)
		rss, hwm, err := vmRSS(pid)
		if err != nil {
			cancel()
			wg.Wait()
			return res, err
		}
		res.rss, res.hwm = max(res.rss, rss), hwm
	}
	cancel()
	wg.Wait()
	return res, nil
}
