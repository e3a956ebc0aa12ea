package cuda

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestLatencies measures what the small operations of a checked case cost
// on this machine: a trip to the device thread, small copies from pageable
// memory, a launch and a wait. It asserts nothing about speed;
// set KVHARNESS_GPU_PROBES=1 to run it.
func TestLatencies(t *testing.T) {
	if os.Getenv("KVHARNESS_GPU_PROBES") == "" {
		t.Skip("a measurement: set KVHARNESS_GPU_PROBES=1 on a GPU machine")
	}
	d := openDevice(t)
	const big = 48 << 10
	dev := alloc(t, d, big)
	page := make([]byte, big)
	m, err := d.Compile("empty", `extern "C" __global__ void empty() {}`)
	must(t, err)
	empty, err := m.Function("empty")
	must(t, err)
	in := func(f func(c *Ctx) error) func() error { return func() error { return d.Do(f) } }
	probes := []struct {
		name string
		f    func() error
	}{
		{"trip (empty Do)", in(func(*Ctx) error { return nil })},
		{"DtoH 4 B pageable, own trip", func() error { return d.DtoH(page[:4], dev) }},
		{"DtoH 4 B pageable", in(func(*Ctx) error { return d.DtoH(page[:4], dev) })},
		{"DtoH 48 KiB pageable", in(func(*Ctx) error { return d.DtoH(page, dev) })},
		{"HtoD 4 B pageable", in(func(*Ctx) error { return d.HtoD(dev, page[:4]) })},
		{"HtoD 48 KiB pageable", in(func(*Ctx) error { return d.HtoD(dev, page) })},
		{"launch + sync", in(func(c *Ctx) error {
			if err := c.Launch(empty, nil, Dim3{X: 1}, Dim3{X: 32}, 0); err != nil {
				return err
			}
			return c.Sync()
		})},
		{"sync alone", in(func(c *Ctx) error { return c.Sync() })},
	}
	var lines []string
	for _, p := range probes {
		var us []float64
		for range 300 {
			start := time.Now()
			must(t, p.f())
			us = append(us, float64(time.Since(start).Nanoseconds())/1e3)
		}
		slices.Sort(us)
		lines = append(lines, fmt.Sprintf("%-30s p50 %7.1f µs  p90 %7.1f µs", p.name, us[len(us)/2], us[len(us)*9/10]))
	}
	t.Logf("median over 300 calls:\n%s", strings.Join(lines, "\n"))
}
