package store

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// cpuClock reads the CPU time of this process and of its children that
// still run (the plugin processes), so that a benchmark on a machine
// shared with other work can say what a case costs, not only how long it
// took. Clock ticks are 10 ms; benchmarks run for seconds.
type cpuClock struct{ self, children time.Duration }

func readCPU() cpuClock {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	c := cpuClock{self: time.Duration(ru.Utime.Nano() + ru.Stime.Nano())}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	me := strconv.Itoa(os.Getpid())
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) < 13 || f[1] != me { // f[1] is the parent's pid
			continue
		}
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		c.children += time.Duration(ut+st) * 10 * time.Millisecond
	}
	return c
}

// reportCPU reports the CPU time per case since start, harness and plugin.
func reportCPU(b *testing.B, start cpuClock) {
	end := readCPU()
	b.ReportMetric(float64((end.self-start.self).Microseconds())/float64(b.N), "harness-cpu-µs/case")
	b.ReportMetric(float64((end.children-start.children).Microseconds())/float64(b.N), "plugin-cpu-µs/case")
}
