package benchrun

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/kvharness/kvharness/harness/plot"
	"github.com/kvharness/kvharness/harness/results"
)

// File names inside a bench output folder.
const (
	JournalFile  = "runs.jsonl"  // every finished run, appended and synced as it finishes: what --resume reads
	LogFile      = "cells.jsonl" // the night's cells, each of all its runs, written whole at the end
	BenchFile    = "bench.txt"   // Go benchmark format, a line per run: for benchstat and kvharness compare
	TableFile    = "table.txt"   // the human table
	ManifestFile = "night.json"  // what the night (or shard) covers: merge checks it
	PlotDir      = "plots"
)

// OutputFiles are the files a night writes into its folder: an input
// given to bench or merge may be none of them.
var OutputFiles = []string{JournalFile, LogFile, BenchFile, TableFile, ManifestFile}

// WriteOutputs writes a night's files: cells.jsonl, bench.txt, table.txt,
// night.json and the plots. Each file is written whole or not at all;
// warnings (cells with host-paced samples, version 1 cells) are returned.
func WriteOutputs(dir string, cells []results.Cell, man Manifest) ([]error, error) {
	warnings := hostPaced(cells)
	if err := writeCells(filepath.Join(dir, LogFile), cells); err != nil {
		return warnings, err
	}
	err := results.WriteFileAtomic(filepath.Join(dir, BenchFile), 0o644, func(w io.Writer) error {
		ws, err := results.WriteBench(w, cells, results.BenchOptions{})
		warnings = append(warnings, ws...)
		return err
	})
	if err != nil {
		return warnings, err
	}
	var table bytes.Buffer
	if err := WriteTable(&table, cells, Text); err != nil {
		return warnings, err
	}
	if err := writeBytes(filepath.Join(dir, TableFile), table.Bytes()); err != nil {
		return warnings, err
	}
	if err := WriteManifest(filepath.Join(dir, ManifestFile), man); err != nil {
		return warnings, err
	}
	return warnings, writePlots(filepath.Join(dir, PlotDir), cells)
}

func writeCells(path string, cells []results.Cell) error {
	return results.WriteFileAtomic(path, 0o644, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		for _, c := range cells {
			c.Schema = results.CellSchema
			if err := c.Validate(); err != nil {
				return err
			}
			if err := enc.Encode(c); err != nil {
				return err
			}
		}
		return nil
	})
}

func writeBytes(path string, data []byte) error {
	return results.WriteFileAtomic(path, 0o644, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// writePlots draws, per plugin and layout (or geometry), the kernel's
// throughput against tokens with the copy roofline, and per plugin,
// layout, mode and cache the latency CDFs of its per-launch cells.
func writePlots(dir string, cells []results.Cell) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var tputKeys, cdfKeys []string
	tput := map[string][]results.Cell{}
	cdf := map[string][]results.Cell{}
	for _, c := range cells {
		group := c.Plugin + "_" + c.Layout
		if results.IsReference(c.Kernel) { // the copy shows as the roofline, from CopyGBps
			continue
		}
		if _, ok := tput[group]; !ok {
			tputKeys = append(tputKeys, group)
		}
		tput[group] = append(tput[group], c)
		if c.Timing == results.PerLaunch && len(c.Samples) > 0 {
			k := fmt.Sprintf("%s_%s_%s", group, c.Mode, c.Cache)
			if _, ok := cdf[k]; !ok {
				cdfKeys = append(cdfKeys, k)
			}
			cdf[k] = append(cdf[k], c)
		}
	}
	for _, k := range tputKeys {
		if err := plotFile(filepath.Join(dir, "throughput_"+k+".png"), func(w io.Writer) error {
			return plot.Throughput(w, tput[k], plot.Options{Title: tput[k][0].Kernel + " throughput: " + k, Footer: footer(tput[k])})
		}); err != nil {
			return err
		}
	}
	for _, k := range cdfKeys {
		if err := plotFile(filepath.Join(dir, "latency_"+k+".png"), func(w io.Writer) error {
			return plot.LatencyCDF(w, cdf[k], plot.Options{Title: "per-launch latency: " + k, Footer: footer(cdf[k])})
		}); err != nil {
			return err
		}
	}
	return nil
}

// footer names the night a plot shows: commit, device and date.
func footer(cells []results.Cell) string { return header(cells[:1]) }

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
