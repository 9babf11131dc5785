// Command cgself sums a callgrind profile's instructions by the function
// that ran them, from the file's own cost lines, for one profile or for two
// side by side:
//
//	cgself [-n 500] [-top 40] before.out [after.out]
//
// With -n, every figure is divided by n (the requests a dump covers, say).
// With two files it prints each function's cost in both and the difference,
// largest first; with one, the functions by their cost.
//
// callgrind_annotate's self column is not used because, for a Go program,
// it is wrong where goroutines switch: it adds the cost of calls made after
// a switch to runtime.chanrecv, runtime.selectgo, runtime.mcall and the
// entry functions of goroutines, and its column sums to more than the
// program's total (146.0 M against 103.9 M for 500 valid calls through
// toolguard, BENCHMARKS.md). A file's cost lines, those that are not a
// call's, sum to its total, which cgself checks.
package main

import (
	"bufio"
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
)

func main() {
	n := flag.Float64("n", 1, "divide every figure by this (the requests a dump covers)")
	top := flag.Int("top", 40, "how many functions to print")
	flag.Parse()
	if flag.NArg() < 1 || flag.NArg() > 2 || *n <= 0 || *top < 0 {
		fmt.Fprintln(os.Stderr, "usage: cgself [-n requests] [-top 40] before.out [after.out]")
		os.Exit(2)
	}
	var costs []profile
	for _, name := range flag.Args() {
		p, err := readFile(name)
		if err != nil {
			fmt.Fprintln(os.Stderr, "cgself:", err)
			os.Exit(1)
		}
		costs = append(costs, p)
	}
	write(os.Stdout, costs, *n, *top)
}

// A profile is the instructions each function ran itself, and their total.
type profile struct {
	self  map[string]int64
	total int64
}

func readFile(name string) (profile, error) {
	f, err := os.Open(name)
	if err != nil {
		return profile{}, err
	}
	defer f.Close()
	p, err := read(f)
	if err != nil {
		return profile{}, fmt.Errorf("%s: %w", name, err)
	}
	return p, nil
}

// read sums a callgrind file's cost lines by function. A cost line is
// the function's own unless it follows a calls= line, when it is the
// call's inclusive cost. Function names may be compressed: "(12) name"
// defines 12, "(12)" refers to it (files and objects are numbered apart,
// and not read). A name ending in 'N (callgrind's mark of a recursion's
// depth) counts as the function's. Only the last event of a line is read:
// the file must have one event (Ir, callgrind's default).
func read(r io.Reader) (profile, error) {
	p := profile{self: map[string]int64{}}
	fns := map[string]string{}
	name := func(s string) (string, error) {
		id, rest, ok := strings.Cut(strings.TrimPrefix(s, "("), ")")
		if !strings.HasPrefix(s, "(") || !ok {
			return s, nil
		}
		if rest = strings.TrimSpace(rest); rest != "" {
			fns[id] = rest
			return rest, nil
		}
		if n, ok := fns[id]; ok {
			return n, nil
		}
		return "", fmt.Errorf("function (%s) is named nowhere before", id)
	}
	var fn string
	var summary int64 = -1
	inCall := false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
		case strings.HasPrefix(line, "events:"):
			if len(strings.Fields(line)) != 2 {
				return p, fmt.Errorf("%q: one event is read, the file has more", line)
			}
		case strings.HasPrefix(line, "summary:"):
			v, err := strconv.ParseInt(strings.TrimSpace(line[len("summary:"):]), 10, 64)
			if err != nil {
				return p, fmt.Errorf("%q: %w", line, err)
			}
			summary = v
		case strings.HasPrefix(line, "fn="):
			var err error
			if fn, err = name(line[len("fn="):]); err != nil {
				return p, err
			}
			if i := strings.LastIndexByte(fn, '\''); i > 0 && isDigits(fn[i+1:]) {
				fn = fn[:i]
			}
		case strings.HasPrefix(line, "cfn="):
			if _, err := name(line[len("cfn="):]); err != nil { // it may name one for later
				return p, err
			}
		case strings.HasPrefix(line, "calls="):
			inCall = true
		case strings.ContainsRune("0123456789+-*", rune(line[0])):
			f := strings.Fields(line)
			if len(f) < 2 {
				return p, fmt.Errorf("cost line %q: not a position and a cost", line)
			}
			v, err := strconv.ParseInt(f[len(f)-1], 10, 64)
			if err != nil {
				return p, fmt.Errorf("cost line %q: %w", line, err)
			}
			if inCall {
				inCall = false
				continue
			}
			if fn == "" {
				return p, fmt.Errorf("cost line %q: no function before it", line)
			}
			p.self[fn] += v
			p.total += v
		}
		// Other lines (fl=, fi=, fe=, ob=, cfi=, jump=, the header's) name
		// files and objects, or say what no sum needs.
	}
	if err := sc.Err(); err != nil {
		return p, err
	}
	switch {
	case summary < 0:
		return p, errors.New("no summary line: not a callgrind file, or cut short")
	case summary != p.total:
		return p, fmt.Errorf("the cost lines sum to %d, the file's summary is %d", p.total, summary)
	}
	return p, nil
}

func isDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// write prints the functions of one profile by cost, or of two by the
// difference (the largest increase first), each figure divided by n.
func write(w io.Writer, ps []profile, n float64, top int) {
	a, b := ps[0], ps[len(ps)-1]
	keys := make([]string, 0, len(a.self)+len(b.self))
	for k := range a.self {
		keys = append(keys, k)
	}
	for k := range b.self {
		if _, ok := a.self[k]; !ok {
			keys = append(keys, k)
		}
	}
	by := func(k string) int64 { return b.self[k] - a.self[k] }
	if len(ps) == 1 {
		by = func(k string) int64 { return a.self[k] }
	}
	slices.SortFunc(keys, func(x, y string) int { return cmp.Or(cmp.Compare(by(y), by(x)), strings.Compare(x, y)) })
	keys = keys[:min(top, len(keys))]
	if len(ps) == 1 {
		fmt.Fprintf(w, "%12.0f  total\n", float64(a.total)/n)
		for _, k := range keys {
			fmt.Fprintf(w, "%12.0f  %s\n", float64(a.self[k])/n, k)
		}
		return
	}
	fmt.Fprintf(w, "%12.0f %12.0f %+12.0f  total\n", float64(a.total)/n, float64(b.total)/n, float64(b.total-a.total)/n)
	for _, k := range keys {
		fmt.Fprintf(w, "%12.0f %12.0f %+12.0f  %s\n", float64(a.self[k])/n, float64(b.self[k])/n, float64(by(k))/n, k)
	}
}
