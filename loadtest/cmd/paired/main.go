// Command paired measures the latency of one request, sent one at a time,
// to several servers in turn: each round sends it once to each, in an order
// that rotates, so that whatever else the machine is doing weighs on every
// server alike. It prints each server's median and, for each server after
// the first, the median of its round-by-round difference from the first.
// The latency is to the answer's last byte, or with -until to the end of
// the answer's first line that holds a text (a stream's first content
// event, say).
// A change of a few microseconds that a run of wrk per server cannot tell
// from the machine's drift shows here (BENCHMARKS.md).
//
//	go run ./loadtest/cmd/paired -body-file req.json http://127.0.0.1:9101 http://127.0.0.1:9102
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "paired:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("paired", flag.ContinueOnError)
	rounds := fs.Int("rounds", 10000, "rounds; each sends the request once to each server")
	warm := fs.Int("warm", 200, "rounds sent first and not counted")
	path := fs.String("path", "/v1/chat/completions", "the request's path on each server")
	file := fs.String("body-file", "", "the request's JSON body (required)")
	until := fs.String("until", "", "time to the end of the answer's first line holding this text, not to its last byte")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *file == "" || fs.NArg() == 0 || *rounds < 1 {
		return errors.New("usage: paired [-rounds N] [-path P] -body-file FILE URL...")
	}
	body, err := os.ReadFile(*file)
	if err != nil {
		return err
	}
	urls := fs.Args()
	if _, err := measure(ctx, urls, *path, string(body), *until, *warm); err != nil {
		return err
	}
	lat, err := measure(ctx, urls, *path, string(body), *until, *rounds)
	if err != nil {
		return err
	}
	for i, u := range urls {
		fmt.Fprintf(out, "%s\tp50 %s\n", u, us(median(lat[i])))
	}
	for i := 1; i < len(urls); i++ {
		d := make([]time.Duration, *rounds)
		for r := range d {
			d[r] = lat[i][r] - lat[0][r]
		}
		fmt.Fprintf(out, "%s - %s\tmedian of the rounds' differences %s\n", urls[i], urls[0], us(median(d)))
	}
	return nil
}

// measure sends the request rounds times to each of urls, one at a time,
// the order rotating each round, and returns each server's latencies by
// round: from sending the request to reading the last byte of the answer,
// or the end of its first line holding until.
func measure(ctx context.Context, urls []string, path, body, until string, rounds int) ([][]time.Duration, error) {
	clients := make([]*http.Client, len(urls))
	lat := make([][]time.Duration, len(urls))
	for i := range urls {
		// A connection of its own per server, kept alive, as a client's.
		clients[i] = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1, DisableCompression: true}}
		defer clients[i].CloseIdleConnections()
		lat[i] = make([]time.Duration, rounds)
	}
	for r := range rounds {
		for k := range urls {
			i := (k + r) % len(urls)
			d, err := once(ctx, clients[i], urls[i]+path, body, until)
			if err != nil {
				return nil, err
			}
			lat[i][r] = d
		}
	}
	return lat, nil
}

func once(ctx context.Context, c *http.Client, url, body, until string) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s: status %d", url, resp.StatusCode)
	}
	var d time.Duration
	if until != "" {
		br := bufio.NewReader(resp.Body)
		for d == 0 {
			line, err := br.ReadSlice('\n')
			if strings.Contains(string(line), until) {
				d = time.Since(start)
			} else if err != nil && err != bufio.ErrBufferFull {
				return 0, fmt.Errorf("%s: no line holds %q (%v)", url, until, err)
			}
		}
	}
	_, err = io.Copy(io.Discard, resp.Body)
	if d == 0 {
		d = time.Since(start)
	}
	if err != nil {
		return 0, err
	}
	return d, nil
}

func median(xs []time.Duration) time.Duration {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func us(d time.Duration) string { return fmt.Sprintf("%.1f µs", float64(d.Nanoseconds())/1e3) }
