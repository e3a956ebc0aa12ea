package benchrun

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/kvharness/kvharness/harness/results"
)

// WriteTable prints one line per store cell with the references it is
// judged against: the same-size copy and the empty launch of its mode.
func WriteTable(w io.Writer, cells []results.Cell) {
	ref := map[string]results.Cell{}
	for _, c := range cells {
		if c.Kernel != KernelStore {
			ref[refKey(c.Identity)] = c
		}
	}
	if line := drawLine(cells); line != "" {
		fmt.Fprintln(w, line)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "plugin\tlayout\ttokens\tmode\tcache\ttiming\tp50 µs\tp99 µs\tGB/s\t% peak\tcopy µs\tvs copy\tempty µs\tsamples\tstop\t")
	for _, c := range cells {
		if c.Kernel != KernelStore {
			continue
		}
		cp := ref[refKey(withKernel(c.Identity, KernelCopy, c.Tokens, results.Eager))]
		em := ref[refKey(withKernel(c.Identity, KernelEmpty, 1, c.Mode))]
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%.1f\t%s\t%s\t%s\t%s\t%d\t%s\t\n",
			c.Plugin, c.Layout, c.Tokens, c.Mode, c.Cache, c.Timing, us(c.Summary.P50), us(c.Summary.P99),
			c.GBps, pct(c.PctOfPeak), us(cp.Summary.P50), ratio(c.Summary.P50, cp.Summary.P50),
			us(em.Summary.P50), c.Summary.N, c.Stop.Kind)
	}
	tw.Flush()
}

// drawLine says how the cells drew their data when it is not one set of
// single random slots, repeated: the table's columns do not show it.
func drawLine(cells []results.Cell) string {
	for _, c := range cells {
		var parts []string
		if c.Rotate > 1 {
			parts = append(parts, fmt.Sprintf("launches rotate over %d pools", c.Rotate))
		}
		if c.SlotRun > 1 {
			parts = append(parts, fmt.Sprintf("slots in runs of %d", c.SlotRun))
		}
		if len(parts) > 0 {
			return strings.Join(parts, "; ")
		}
	}
	return ""
}

func withKernel(id results.Identity, kernel string, tokens int, mode results.Mode) results.Identity {
	id.Kernel, id.Tokens, id.Mode = kernel, tokens, mode
	return id
}

// refKey identifies a reference cell regardless of its batch size.
func refKey(id results.Identity) string {
	return fmt.Sprintf("%s|%s|%s|%d|%s|%s|%s", id.Plugin, id.Kernel, id.Layout, id.Tokens, id.Mode, id.Cache, id.Timing)
}

func us(ns float64) string {
	if ns == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", ns/1e3)
}

func pct(p float64) string {
	if p == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", p)
}

func ratio(a, b float64) string {
	if a == 0 || b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*b/a)
}
