package main

import (
	"fmt"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"time"
)

// armResults are one arm's figures, one entry per round.
type armResults struct {
	url, script string
	one, many   []wrkResult     // at 1 connection, at -conns
	first, last []time.Duration // stream probes
	cpu         []time.Duration // the proxy's CPU time per request at -conns; none for direct arms
}

func (r *armResults) p50one() time.Duration {
	return median(collect(r.one, func(w wrkResult) time.Duration { return w.p50 }))
}
func (r *armResults) p99one() time.Duration {
	return median(collect(r.one, func(w wrkResult) time.Duration { return w.p99 }))
}
func (r *armResults) p50many() time.Duration {
	return median(collect(r.many, func(w wrkResult) time.Duration { return w.p50 }))
}
func (r *armResults) p99many() time.Duration {
	return median(collect(r.many, func(w wrkResult) time.Duration { return w.p99 }))
}
func (r *armResults) rps() float64 {
	return median(collect(r.many, func(w wrkResult) float64 { return w.rps }))
}
func (r *armResults) errors() int64 {
	var n int64
	for _, w := range append(slices.Clone(r.one), r.many...) {
		n += w.errors
	}
	return n
}

type report struct {
	cfg     config
	arms    []arm
	env     environment
	results map[string]*armResults
	mem     *memResult
	load    string
	tick    time.Duration // the clock tick of /proc's CPU times
}

func (rp *report) markdown() string {
	var b strings.Builder
	c := rp.cfg
	fmt.Fprintf(&b, "Medians of %d round(s); each round runs every arm for %s at 1 connection and for %s at %d connections (wrk, %d threads), interleaved. ",
		c.rounds, c.duration, c.duration, c.conns, c.threads)
	fmt.Fprintf(&b, "Fake model: %s latency, %d content events per stream, reply padding %d bytes. Added = p50 at 1 connection minus direct's. ",
		c.latency, c.events, c.pad)
	fmt.Fprintf(&b, "CPU/req = the proxy process's CPU time (utime+stime, /proc/<pid>/stat, %s ticks) during the %d-connection run, divided by the requests it completed; the history arms send a 40 KB chat history, the first-turn arms the same history numbered anew for every request (a conversation toolguard has not seen).\n\n",
		rp.tick, c.conns)
	b.WriteString("| arm | req/s @" + fmt.Sprint(c.conns) + " | p50 @1 | p99 @1 | p50 @" + fmt.Sprint(c.conns) + " | p99 @" + fmt.Sprint(c.conns) +
		" | added p50 | req/s ÷ bare | added ÷ bare's | p99 @" + fmt.Sprint(c.conns) + " ÷ bare | CPU/req | CPU ÷ bare's | errors |\n")
	b.WriteString("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, a := range rp.arms {
		r := rp.results[a.name]
		base, bare := rp.results[a.base], rp.results[a.bare]
		added := r.p50one() - base.p50one()
		bareAdded := bare.p50one() - base.p50one()
		cpu, cpuRatio := "–", "–"
		if len(r.cpu) > 0 {
			cpu = us(median(r.cpu))
			cpuRatio = ratio(float64(median(r.cpu)), float64(median(bare.cpu)))
		}
		fmt.Fprintf(&b, "| %s | %.0f | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d |\n",
			a.name, r.rps(), ms(r.p50one()), ms(r.p99one()), ms(r.p50many()), ms(r.p99many()),
			signedMs(added), ratio(r.rps(), bare.rps()), ratio(float64(added), float64(bareAdded)),
			ratio(float64(r.p99many()), float64(bare.p99many())), cpu, cpuRatio, r.errors())
	}
	streams := false
	for _, a := range rp.arms {
		if a.stream {
			if !streams {
				b.WriteString("\nStreams, one at a time (" + fmt.Sprint(c.probes) + " per arm and round at most): time from sending the request to the first content event and to the last byte.\n\n")
				b.WriteString("| arm | first content p50 | last byte p50 | first content over direct |\n| --- | ---: | ---: | ---: |\n")
				streams = true
			}
			r, base := rp.results[a.name], rp.results[a.base]
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", a.name, ms(median(r.first)), ms(median(r.last)), signedMs(median(r.first)-median(base.first)))
		}
	}
	if m := rp.mem; m != nil {
		fmt.Fprintf(&b, "\nMemory: %d of %d slow streams open through toolguard (opened in %s): VmRSS %.1f MB (idle before: %.1f MB, peak VmHWM %.1f MB).\n",
			m.opened, m.streams, m.openTime.Round(time.Millisecond), mb(m.rss), mb(m.idle), mb(m.hwm))
	}
	b.WriteString("\n" + rp.targets())
	fmt.Fprintf(&b, "\nThe bare proxy holds the toolguard arms' reserve for the collector (TOOLGUARD_GC_RESERVE_BYTES): %d bytes.\n", rp.cfg.bareReserve)
	fmt.Fprintf(&b, "\nMachine: %d CPUs (nproc), %s, %s, load average at the end %s.\n", runtime.NumCPU(), uname(), runtime.Version(), rp.load)
	return b.String()
}

// targets checks issue 7's targets against the figures.
func (rp *report) targets() string {
	var b strings.Builder
	b.WriteString("| target | figure | met |\n| --- | --- | --- |\n")
	line := func(target, figure string, ok bool) {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", target, figure, yes(ok))
	}
	res := rp.results
	direct, bare, valid := res["direct"], res["reverseproxy"], res["toolguard-valid"]
	if direct == nil || bare == nil || valid == nil {
		return "(targets need the direct, reverseproxy and toolguard-valid arms)\n"
	}
	bareAdded := bare.p50one() - direct.p50one()
	validAdded := valid.p50one() - direct.p50one()
	line("valid calls: throughput ≥ 80% of the bare proxy's", fmt.Sprintf("%.0f vs %.0f req/s (%s)", valid.rps(), bare.rps(), ratio(valid.rps(), bare.rps())),
		valid.rps() >= 0.8*bare.rps())
	line("valid calls: added p50 ≤ 1.25× the bare proxy's", fmt.Sprintf("%s vs %s (%s)", ms(validAdded), ms(bareAdded), ratio(float64(validAdded), float64(bareAdded))),
		float64(validAdded) <= 1.25*float64(bareAdded))
	line(fmt.Sprintf("valid calls: p99 @%d ≤ 1.5× the bare proxy's", rp.cfg.conns), fmt.Sprintf("%s vs %s (%s)", ms(valid.p99many()), ms(bare.p99many()), ratio(float64(valid.p99many()), float64(bare.p99many()))),
		float64(valid.p99many()) <= 1.5*float64(bare.p99many()))
	if rep := res["toolguard-repair"]; rep != nil {
		d := rep.p50one() - valid.p50one()
		line("repair path: p50 ≤ valid path's + 50 µs", fmt.Sprintf("%s more", signedMs(d)), d <= 50*time.Microsecond)
	}
	if pk := res["portkey"]; pk != nil {
		pkAdded := pk.p50one() - direct.p50one()
		line("≥ 5× Portkey's throughput", fmt.Sprintf("%.0f vs %.0f req/s (%s)", valid.rps(), pk.rps(), ratio(valid.rps(), pk.rps())), valid.rps() >= 5*pk.rps())
		line("≤ ⅓ of Portkey's added latency", fmt.Sprintf("%s vs %s (%s)", ms(validAdded), ms(pkAdded), ratio(float64(validAdded), float64(pkAdded))), 3*validAdded <= pkAdded)
	}
	if st, sd := res["stream-toolguard"], res["stream-direct"]; st != nil && sd != nil && len(st.first) > 0 {
		d := median(st.first) - median(sd.first)
		line("stream: first content within 0.3 ms of the upstream's", fmt.Sprintf("%s later than direct", signedMs(d)), d <= 300*time.Microsecond)
	}
	if m := rp.mem; m != nil {
		line(fmt.Sprintf("%d concurrent streams < 150 MB RSS", m.streams), fmt.Sprintf("%.1f MB with %d open", mb(m.rss), m.opened), m.opened == m.streams && m.rss < 150<<20)
	}
	return b.String()
}

func collect[T any](ws []wrkResult, f func(wrkResult) T) []T {
	out := make([]T, len(ws))
	for i, w := range ws {
		out[i] = f(w)
	}
	return out
}

func median[T time.Duration | float64](xs []T) T {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func us(d time.Duration) string { return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond)) }

func ms(d time.Duration) string { return fmt.Sprintf("%.3f ms", float64(d)/float64(time.Millisecond)) }

func signedMs(d time.Duration) string {
	return fmt.Sprintf("%+.3f ms", float64(d)/float64(time.Millisecond))
}

func ratio(a, b float64) string {
	if b == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

func mb(n int64) float64 { return float64(n) / (1 << 20) }

func yes(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}

func uname() string {
	out, err := exec.Command("uname", "-srm").Output()
	if err != nil {
		return runtime.GOOS + "/" + runtime.GOARCH
	}
	return strings.TrimSpace(string(out))
}
