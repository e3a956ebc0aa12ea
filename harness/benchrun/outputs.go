package benchrun

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/kvharness/kvharness/harness/plot"
	"github.com/kvharness/kvharness/harness/results"
)

// File names inside a bench output folder.
const (
	LogFile   = "cells.jsonl" // every finished cell, appended and synced as it finishes
	BenchFile = "bench.txt"   // Go benchmark format, for benchstat and kvharness compare
	TableFile = "table.txt"   // the human table
	PlotDir   = "plots"
)

// WriteOutputs writes the benchmark file, the table and the plots for all
// cells of a run (resumed cells included). Each file is written whole or
// not at all; warnings (cells without raw samples, cells with host-paced
// samples) are returned.
func WriteOutputs(dir string, cells []results.Cell) ([]error, error) {
	warnings := hostPaced(cells)
	err := results.WriteFileAtomic(filepath.Join(dir, BenchFile), 0o644, func(w io.Writer) error {
		ws, err := results.WriteBench(w, cells, results.BenchOptions{})
		warnings = append(warnings, ws...)
		return err
	})
	if err != nil {
		return warnings, err
	}
	var table bytes.Buffer
	WriteTable(&table, cells)
	if err := results.WriteFileAtomic(filepath.Join(dir, TableFile), 0o644, func(w io.Writer) error {
		_, err := w.Write(table.Bytes())
		return err
	}); err != nil {
		return warnings, err
	}
	return warnings, writePlots(filepath.Join(dir, PlotDir), cells)
}

// writePlots draws, per plugin and layout, throughput against tokens with
// the copy roofline, and per plugin, layout, mode and cache the latency
// CDFs of the per-launch cells.
func writePlots(dir string, cells []results.Cell) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tput := map[string][]results.Cell{}
	cdf := map[string][]results.Cell{}
	for _, c := range cells {
		group := c.Plugin + "_" + c.Layout
		if c.Kernel == KernelStore { // the copy shows as the roofline, from CopyGBps
			tput[group] = append(tput[group], c)
		}
		if c.Kernel == KernelStore && c.Timing == results.PerLaunch && len(c.Samples) > 0 {
			k := fmt.Sprintf("%s_%s_%s", group, c.Mode, c.Cache)
			cdf[k] = append(cdf[k], c)
		}
	}
	for k, cs := range tput {
		if err := plotFile(filepath.Join(dir, "throughput_"+k+".png"), func(w io.Writer) error {
			return plot.Throughput(w, cs, plot.Options{Title: "throughput " + k})
		}); err != nil {
			return err
		}
	}
	for k, cs := range cdf {
		if err := plotFile(filepath.Join(dir, "latency_"+k+".png"), func(w io.Writer) error {
			return plot.LatencyCDF(w, cs, plot.Options{Title: "per-launch latency " + k})
		}); err != nil {
			return err
		}
	}
	return nil
}

func plotFile(path string, draw func(io.Writer) error) error {
	return results.WriteFileAtomic(path, 0o644, draw)
}

// hostPaced warns of the cells whose plugin kept batched samples that may
// time the host's launch rate: such a cell's time may be too high.
func hostPaced(cells []results.Cell) []error {
	var out []error
	for _, c := range cells {
		if c.HostPaced > 0 {
			out = append(out, fmt.Errorf("cell %s: %d batched samples may time the host's launch rate, not the GPU's (their hold kernel ended before the batch was queued, after the plugin's retakes); a busy host does this: rerun the cell", c.Key(), c.HostPaced))
		}
	}
	return out
}
