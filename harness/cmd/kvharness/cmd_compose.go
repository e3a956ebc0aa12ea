package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/kernels/read"
	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/protocol"
)

// composeFlags are check's flags for a composed check: a store kernel
// (--writer) and the read kernel that consumes its cache (--reader), run
// on one pool.
type composeFlags struct {
	writer, reader, writerVariant, readerVariant, readerLayout string
}

func (c *composeFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&c.writer, "writer", "", "with --reader: the plugin whose store kernel writes the cache (a composed check: the reader must see what the writer was given)")
	fs.StringVar(&c.reader, "reader", "", "with --writer: the plugin whose read kernel reads the cache the writer wrote")
	fs.StringVar(&c.writerVariant, "writer-variant", "", "the writer's variant")
	fs.StringVar(&c.readerVariant, "reader-variant", "", "the reader's variant")
	fs.StringVar(&c.readerLayout, "reader-layout", "", "the layout the reader reads the writer's cache as (default: the writer's --layout); the same bytes a token and a page")
}

// on reports whether the command line asks for a composed check.
func (c *composeFlags) on(fs *pflag.FlagSet) bool {
	return slices.ContainsFunc([]string{"writer", "reader", "writer-variant", "reader-variant", "reader-layout"}, fs.Changed)
}

// composeRefused are check's flags a composed check does not take, and why.
var composeRefused = []struct{ flag, why string }{
	{"plugin", "a composed check names its two kernels with --writer and --reader"},
	{"variant", "give --writer-variant or --reader-variant"},
	{"kernel", "a composed check runs the writer's store kernel and the reader's read kernel"},
	{"heads", "a composed check reads layouts of one key row a slot"},
	{"graph", "a composed check stores eagerly"},
	{"jobs", "a composed check runs its paddings one after another"},
	{"stress", "check each kernel alone with --stress"},
	{"shard", "a composed check has one row per padding"},
	{"trace", "traces are replayed by --kernel sequence"},
	{"sanitize", "a composed check runs on the cpu backend"},
	{"timings", "a composed check prints no timings"},
	{"max-capacity", "a composed case's batch is its keys and up to 16 padded rows"},
}

// validate refuses a composed check's flags that cannot run, one line
// each, naming the flag and the fix.
func (c *composeFlags) validate(f *checkFlags, fs *pflag.FlagSet) error {
	for _, r := range composeRefused {
		if fs.Changed(r.flag) {
			return fmt.Errorf("--%s does not apply to --writer/--reader: %s; remove it", r.flag, r.why)
		}
	}
	switch {
	case c.writer == "" && c.reader == "":
		return fmt.Errorf("--writer-variant, --reader-variant and --reader-layout need --writer and --reader (as in --writer gostore --reader gostore)")
	case c.reader == "":
		return fmt.Errorf("--writer %s needs --reader: the plugin whose read kernel consumes the cache it writes (as in --writer %s --reader %s)", c.writer, c.writer, c.writer)
	case c.writer == "":
		return fmt.Errorf("--reader %s needs --writer: the plugin whose store kernel writes the cache it reads (as in --writer %s --reader %s)", c.reader, c.reader, c.reader)
	case f.layout == kind.EngineLayouts:
		return fmt.Errorf("--layout %s: a composed check reads layouts of one key row a slot; give one by name (bf16, fp8-paged, fp8-rows, ...)", f.layout)
	case c.readerLayout != "" && f.layout == kind.AllLayouts && f.layoutFile == "":
		return fmt.Errorf("--reader-layout %s needs the writer's layout: give --layout too (as in --layout fp8-paged --reader-layout %s)", c.readerLayout, c.readerLayout)
	case f.padding != "all" && !slices.Contains(read.Paddings, read.Padding(f.padding)):
		return fmt.Errorf("--padding %q: want none, count, sink, minus1 or all", f.padding)
	case f.pageSize < 1 || f.pageSize > 1<<16:
		return fmt.Errorf("--page-size %d: want 1..65536 tokens", f.pageSize)
	case f.timeout <= 0:
		return fmt.Errorf("--timeout %v: want a positive duration", f.timeout)
	case f.layoutFile != "" && f.layout != kind.AllLayouts:
		return fmt.Errorf("--layout and --layout-file conflict: give one")
	}
	if err := checkCaseFlags(f.cases, f.slots, f.headDim, "a composed check's"); err != nil {
		return err
	}
	if _, err := parseValue(f.value); err != nil {
		return err
	}
	var err error
	f.want, err = arena.ParseWant(f.backend, f.device)
	return err
}

// runCompose is check --writer P --reader Q: P's store, then Q's read, on
// one pool, for each padding.
func runCompose(ctx context.Context, e *env, f *checkFlags, c *composeFlags, fs *pflag.FlagSet, junitFile string) int {
	start := time.Now()
	if err := c.validate(f, fs); err != nil {
		return e.errorf("%v", err)
	}
	if err := writableFolder(f.results); err != nil {
		return e.errorf("--results %s: %v; give a folder you can write", f.results, err)
	}
	if err := checkJUnitFile(junitFile); err != nil {
		return e.errorf("%v", err)
	}
	ws, err := openTrusted(ctx, c.writer, c.writerVariant, f.headDim, f.pageSize, f.timeout, f.trust, nil)
	if err != nil {
		return e.errorf("--writer %s: %v", c.writer, err)
	}
	defer ws.close()
	rs, err := openTrusted(ctx, c.reader, c.readerVariant, f.headDim, f.pageSize, f.timeout, f.trust, nil)
	if err != nil {
		return e.errorf("--reader %s: %v", c.reader, err)
	}
	defer rs.close()
	for _, x := range []struct {
		flag, arg string
		s         *session
		kernel    protocol.Kernel
	}{{"writer", c.writer, ws, "store"}, {"reader", c.reader, rs, read.Name}} {
		if !x.s.desc.Serves(x.kernel) {
			return e.errorf("--%s %s has no %s kernel (it serves %v): give a plugin whose %s kernel %s the cache", x.flag, x.arg, x.kernel,
				x.s.desc.Kernels, x.kernel, map[string]string{"writer": "writes", "reader": "reads"}[x.flag])
		}
	}
	cfg, release, err := c.config(f, ws, rs)
	if err != nil {
		return e.errorf("%v", err)
	}
	defer release()
	g := progressOn(e, "check", "cases")
	res, err := read.Compose(observe(ctx, g), ws.dir, cfg)
	g.done()
	if err != nil {
		return e.errorf("%v", err)
	}
	replay := c.replayLine(f, cfg)
	if f.json {
		res.WriteJSON(e.stdout, replay)
	} else {
		res.WriteText(e.stdout, replay)
	}
	if err := writeJUnit(junitFile, "kvharness check", composeSuite(res, replay, start)); err != nil {
		return e.errorf("%v", err)
	}
	switch {
	case res.Failed():
		return exitViolation
	case res.Faulted():
		return exitError
	}
	return exitPass
}

// config picks the pair's layouts, backend and rows from the flags and
// the two plugins' declarations.
func (c *composeFlags) config(f *checkFlags, ws, rs *session) (read.ComposeConfig, func(), error) {
	none := func() {}
	wl, rl, err := c.layouts(f, ws.desc, rs.desc)
	if err != nil {
		return read.ComposeConfig{}, none, err
	}
	backend, release, err := f.want.Choose(ws.desc.Backends)
	if err != nil {
		return read.ComposeConfig{}, none, fmt.Errorf("--writer %s: %w", c.writer, err)
	}
	if !slices.Contains(rs.desc.Backends, wireBackend(backend.Place())) {
		release()
		return read.ComposeConfig{}, none, fmt.Errorf("the reader %s does not map %s arenas, where the writer's pool is: give --backend one both serve", c.reader, backend.Place())
	}
	pads := read.Paddings
	if f.padding != "all" {
		pads = []read.Padding{read.Padding(f.padding)}
	}
	slots := f.slots
	if slots == 0 {
		slots = kind.DefaultSlots
	}
	mode, _ := parseValue(f.value) // validated
	return read.ComposeConfig{
		Writer: read.Side{Plugin: ws.plugin, Arg: replayable(c.writer), Variant: c.writerVariant, Layout: wl},
		Reader: read.Side{Plugin: rs.plugin, Arg: replayable(c.reader), Variant: c.readerVariant, Layout: rl},
		Slots:  slots, Paddings: pads, Cases: f.cases, Seed: f.seed, Backend: backend, Mode: mode}, release, nil
}

// layouts are the writer's layout and the reader's: --layout (or the
// first the writer declares that the reader reads too) and
// --reader-layout (or the same). Each must be declared by its kernel.
func (c *composeFlags) layouts(f *checkFlags, wd, rd *plugin.Description) (*layout.Layout, *layout.Layout, error) {
	writes, reads := declaredNames(wd), declaredNames(rd)
	name := f.layout
	if f.layoutFile == "" && name == kind.AllLayouts {
		planes, _ := kind.GroupNames(wd, kind.AllLayouts)
		i := slices.IndexFunc(planes, func(n string) bool { return slices.Contains(reads, n) })
		if i < 0 {
			return nil, nil, fmt.Errorf("the writer %s stores %v and the reader %s reads %v: no layout in common; name the writer's with --layout and the reader's with --reader-layout (the same bytes a page)",
				c.writer, writes, c.reader, reads)
		}
		name = planes[i]
	}
	ls, err := kind.Layouts(wd, name, f.layoutFile, f.headDim, f.pageSize)
	if err != nil {
		return nil, nil, err
	}
	wl := ls[0]
	if !slices.Contains(writes, wl.Name) {
		return nil, nil, fmt.Errorf("the writer %s does not store layout %s (it stores %v): give --layout one it declares", c.writer, wl.Name, writes)
	}
	if c.readerLayout == "" {
		if !slices.Contains(reads, wl.Name) {
			return nil, nil, fmt.Errorf("the reader %s does not read layout %s, which the writer %s writes (it reads %v): give --reader-layout NAME to check it on %s's cache as it reads it (the same bytes a page), or declare %s in the reader",
				c.reader, wl.Name, c.writer, reads, c.writer, wl.Name)
		}
		return wl, wl, nil
	}
	if !slices.Contains(reads, c.readerLayout) {
		return nil, nil, fmt.Errorf("--reader-layout %s: the reader %s does not read it (it reads %v)", c.readerLayout, c.reader, reads)
	}
	rl, err := layout.Builtin(c.readerLayout, wl.HeadDim, wl.PageSize)
	if err != nil {
		return nil, nil, fmt.Errorf("--reader-layout %s: %w", c.readerLayout, err)
	}
	return wl, rl, read.SamePool(wl, rl)
}

func declaredNames(d *plugin.Description) []string {
	var out []string
	for _, g := range d.Layouts {
		out = append(out, g.Layout)
	}
	return out
}

// replayLine is the command that checks one case of a row again.
func (c *composeFlags) replayLine(f *checkFlags, cfg read.ComposeConfig) read.ReplayFunc {
	return func(pad read.Padding, seed int64) string {
		args := []string{"kvharness check --writer", shellQuote(c.writer)}
		if c.writerVariant != "" {
			args = append(args, "--writer-variant", shellQuote(c.writerVariant))
		}
		args = append(args, "--reader", shellQuote(c.reader))
		if c.readerVariant != "" {
			args = append(args, "--reader-variant", shellQuote(c.readerVariant))
		}
		if f.layoutFile != "" {
			args = append(args, "--layout-file", shellQuote(f.layoutFile))
		} else {
			args = append(args, "--layout", cfg.Writer.Layout.Name)
		}
		if c.readerLayout != "" {
			args = append(args, "--reader-layout", c.readerLayout)
		}
		args = append(args, "--head-dim", fmt.Sprint(cfg.Writer.Layout.HeadDim), "--page-size", fmt.Sprint(cfg.Writer.Layout.PageSize),
			"--slots", fmt.Sprint(cfg.Slots), "--padding", string(pad), "--seed", fmt.Sprint(seed), "--cases 1",
			"--backend", backendFlag(cfg.Backend.Place()))
		if f.value != "recipe" {
			args = append(args, "--value", f.value)
		}
		return strings.Join(args, " ")
	}
}

// wireBackend is the protocol's name of where a place's arenas live.
func wireBackend(p arena.Place) protocol.Backend {
	if p.OnDevice() {
		return protocol.BackendCUDA
	}
	return protocol.BackendSHM
}

// backendFlag is --backend's value for a place.
func backendFlag(p arena.Place) string {
	if p.OnDevice() {
		return "cuda"
	}
	return "cpu"
}
