package telemetry

import (
	"fmt"
	"io"
	"strings"
)

const na = "n/a"

// WriteText writes s as a compact human-readable report, one block per
// device, for `kvharness gpu`. Fields NVML did not answer read "n/a" and
// the block's notes line says why.
func (s *Snapshot) WriteText(w io.Writer) error {
	p := &printer{w: w}
	p.printf("driver %s  CUDA %s  %d GPU(s)\n", orNA(s.DriverVersion), orNA(s.CUDADriverVersion), len(s.Devices))
	if len(s.Notes) > 0 {
		p.printf("notes  %s\n", strings.Join(s.Notes, "; "))
	}
	for i := range s.Devices {
		p.printf("\n")
		s.Devices[i].writeText(p)
	}
	if p.err != nil {
		return fmt.Errorf("telemetry: write GPU report: %w", p.err)
	}
	return nil
}

func (d *Device) writeText(p *printer) {
	cc := na
	if d.ComputeCapability != "" {
		cc = "cc " + d.ComputeCapability
	}
	p.printf("GPU %d  %s  (%s)\n", d.Index, orNA(d.Name), cc)
	p.line("uuid", orNA(d.UUID))
	width := opt(d.PCIeWidth, "x%d")
	if d.PCIeWidth == nil {
		width = "width n/a"
	}
	p.line("pci", fmt.Sprintf("%s  gen %s %s", orNA(d.PCIBusID), opt(d.PCIeGen, "%d"), width))
	p.line("memory", memoryText(d.Memory))
	p.line("clocks", fmt.Sprintf("sm %s MHz (max %s)  mem %s MHz (max %s)",
		opt(d.SMClockMHz, "%d"), opt(d.MaxSMClockMHz, "%d"), opt(d.MemClockMHz, "%d"), opt(d.MaxMemClockMHz, "%d")))
	peak := opt(d.PeakMemoryBandwidthGBps, "%.0f GB/s")
	if d.PeakMemoryBandwidthGBps != nil {
		peak += fmt.Sprintf(" (%d MHz x %d-bit x 2 DDR)", *d.MaxMemClockMHz, *d.MemoryBusWidthBits)
	} else {
		peak += fmt.Sprintf(" (bus %s bits)", opt(d.MemoryBusWidthBits, "%d"))
	}
	p.line("peak bw", peak)
	p.line("power", fmt.Sprintf("%s  %s C  %s / %s W",
		orNA(d.PerformanceState), opt(d.TemperatureC, "%d"), opt(d.PowerW, "%.0f"), opt(d.PowerLimitW, "%.0f")))
	events := na
	if d.ClockEventMask != nil {
		events = "none"
		if len(d.ClockEvents) > 0 {
			events = strings.Join(d.ClockEvents, ", ")
		}
	}
	p.line("events", events)
	if len(d.Notes) > 0 {
		p.line("notes", strings.Join(d.Notes, "; "))
	}
}

func memoryText(m *Memory) string {
	if m == nil {
		return na
	}
	const gib = 1 << 30
	return fmt.Sprintf("%.1f / %.1f GiB used, %.1f GiB free",
		float64(m.Used)/gib, float64(m.Total)/gib, float64(m.Free)/gib)
}

func opt[T any](v *T, format string) string {
	if v == nil {
		return na
	}
	return fmt.Sprintf(format, *v)
}

func orNA(s string) string {
	if s == "" {
		return na
	}
	return s
}

// printer keeps the first write error so the layout code stays linear.
type printer struct {
	w   io.Writer
	err error
}

func (p *printer) printf(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}

func (p *printer) line(label, value string) {
	p.printf("  %-8s %s\n", label, value)
}
