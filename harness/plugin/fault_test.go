package plugin_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/internal/kindtest"
	"github.com/kvharness/kvharness/harness/internal/plugintest"
	"github.com/kvharness/kvharness/harness/kernels/store"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/rundir"
	"github.com/kvharness/kvharness/harness/workload"
)

// faultCase is one way the faulty plugin misbehaves and what the harness
// must call it.
type faultCase struct {
	variant string
	kind    plugin.FaultKind
	call    string
	detail  string // a substring of the fault's detail
}

var faultCases = []faultCase{
	{"panic", plugin.Crash, "StoreBatch", "exited with status 2"},
	{"segfault", plugin.Crash, "StoreBatch", "signal segmentation fault"},
	{"exit", plugin.Crash, "StoreBatch", "exited with status 3"},
	{"hang", plugin.Hang, "StoreBatch", "no answer within"},
	{"bad-handshake", plugin.Handshake, "start", "Unrecognized remote plugin message"},
	{"wrong-version", plugin.Handshake, "start", "rebuild the plugin"},
	{"slow-start", plugin.Handshake, "start", "timeout while waiting for plugin to start"},
	{"garbage-response", plugin.Protocol, "Attach", "0 geometries for 3 pools"},
	{"leak-child", plugin.Crash, "StoreBatch", "exited with status 2"},
	{"device-fault", plugin.Crash, "StoreBatch", "CUDA_ERROR_ILLEGAL_ADDRESS"},
}

// TestFaultSuite runs every fault of the faulty plugin and prints the
// table: each must become a Fault of the right kind, at the right call,
// never a panic of the harness and never an invariant violation.
func TestFaultSuite(t *testing.T) {
	dir := plugintest.Dir(t)
	path := plugintest.Resolve(t, "faulty")
	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "variant\twant\tgot\tcall\tdetail")
	for _, fc := range faultCases {
		f := provoke(t, dir, path, fc.variant)
		got, call, detail := "none", "-", "-"
		if f != nil {
			got, call, detail = string(f.Kind), f.Call, f.Detail
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", fc.variant, fc.kind, got, call, firstLine(detail))
		if f == nil || f.Kind != fc.kind || f.Call != fc.call || !strings.Contains(f.Detail, fc.detail) {
			t.Errorf("%s: got %v, want a %s fault during %s mentioning %q", fc.variant, f, fc.kind, fc.call, fc.detail)
		}
	}
	tw.Flush()
	t.Logf("fault suite:\n%s", table.String())
}

func firstLine(s string) string {
	if len(s) > 90 {
		s = s[:90] + "…"
	}
	return strings.SplitN(s, "\n", 2)[0]
}

// provoke starts the faulty plugin with a variant, checks one case, and
// returns the fault it caused.
func provoke(t *testing.T, dir *rundir.Dir, path, variant string) *plugin.Fault {
	t.Helper()
	ctx := context.Background()
	p, err := plugin.Start(ctx, "faulty", path, plugin.Options{Dir: dir, Variant: variant,
		CallTimeout: time.Second, StartTimeout: 2 * time.Second})
	if err != nil {
		return asFault(t, err)
	}
	defer p.Close()
	l := kindtest.Layout(t, "bf16", 128, 64)
	tg, err := store.Open(ctx, p, dir, store.Config{Backend: arena.SHM{}, Variant: variant, Layout: l, Slots: 128, MaxCapacity: 8, Seed: 1})
	if err != nil {
		return asFault(t, err)
	}
	defer tg.Close(ctx)
	c := &store.Case{Padding: store.PadCount, Valid: 1, Loc: []int64{3, 9},
		Rows: []workload.Row{{Kind: workload.RowNormal, Seed: 1}, {Kind: workload.RowGarbage, Seed: 2}}}
	res, err := tg.Check(ctx, c)
	if err == nil {
		t.Errorf("%s: no fault; violations %v", variant, res.Violations)
		return nil
	}
	return asFault(t, err)
}

func asFault(t *testing.T, err error) *plugin.Fault {
	t.Helper()
	f, ok := plugin.AsFault(err)
	if !ok {
		t.Errorf("error is not a plugin fault: %v", err)
	}
	return f
}

// TestNoLeakedChild: the leak-child variant starts a child and crashes;
// closing the plugin kills its whole process group, the child included.
func TestNoLeakedChild(t *testing.T) {
	dir := plugintest.Dir(t)
	path := plugintest.Resolve(t, "faulty")
	if f := provoke(t, dir, path, "leak-child"); f == nil || f.Kind != plugin.Crash {
		t.Fatalf("leak-child: %v", f)
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		left := processesWith("KVHARNESS_VARIANT=leak-child", dir.Path)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes left behind: %v", left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// processesWith lists live processes whose environment holds all of marks.
func processesWith(marks ...string) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		all := true
		for _, m := range marks {
			all = all && bytes.Contains(env, []byte(m))
		}
		if stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); all && !bytes.Contains(stat, []byte(") Z ")) {
			out = append(out, pid)
		}
	}
	return out
}

// TestCancelledStart: a start whose context is cancelled while the plugin
// has not yet answered the handshake ends at once with a handshake fault
// that says so, not at the start timeout, and leaves no process behind.
func TestCancelledStart(t *testing.T) {
	dir := plugintest.Dir(t)
	path := plugintest.Resolve(t, "faulty")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	start := time.Now()
	_, err := plugin.Start(ctx, "faulty", path, plugin.Options{Dir: dir, Variant: "slow-start", StartTimeout: time.Minute})
	f, ok := plugin.AsFault(err)
	if !ok || f.Kind != plugin.Handshake || !errors.Is(err, context.Canceled) {
		t.Fatalf("start cancelled: %v; want a handshake fault wrapping context.Canceled", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the cancelled start took %v", d)
	}
	if left := processesWith("KVHARNESS_VARIANT=slow-start", dir.Path); len(left) > 0 {
		t.Errorf("processes %v outlived the cancelled start", left)
	}
}

// TestAttachGetsLonger: Attach compiles a plugin's kernels, so it gets
// AttachTimeoutFactor times the call deadline. A plugin that answers
// Attach after longer than a call deadline is no hang and stores on;
// one that never answers is a hang at Attach, found in bounded time.
func TestAttachGetsLonger(t *testing.T) {
	dir := plugintest.Dir(t)
	path := plugintest.Resolve(t, "faulty")
	ctx := context.Background()
	const callTimeout = 300 * time.Millisecond // slow-attach answers after 1 s: past this, within 6× it
	open := func(variant string) (*store.Target, error) {
		p, err := plugin.Start(ctx, "faulty", path, plugin.Options{Dir: dir, Variant: variant, CallTimeout: callTimeout})
		if err != nil {
			t.Fatalf("%s: start: %v", variant, err)
		}
		t.Cleanup(func() { p.Close() })
		return store.Open(ctx, p, dir, store.Config{Backend: arena.SHM{}, Variant: variant, Layout: kindtest.Layout(t, "bf16", 128, 64), Slots: 128, MaxCapacity: 8, Seed: 1})
	}
	tg, err := open("slow-attach")
	if err != nil {
		t.Fatalf("slow-attach: %v, want the late Attach accepted", err)
	}
	defer tg.Close(ctx)
	c := &store.Case{Padding: store.PadCount, Valid: 1, Loc: []int64{3, 9},
		Rows: []workload.Row{{Kind: workload.RowNormal, Seed: 1}, {Kind: workload.RowGarbage, Seed: 2}}}
	if res, err := tg.Check(ctx, c); err != nil || len(res.Violations) > 0 {
		t.Errorf("slow-attach stores correctly after its late Attach; got %v, violations %v", err, res.Violations)
	}

	t0 := time.Now()
	_, err = open("hang-attach")
	f, ok := plugin.AsFault(err)
	if !ok || f.Kind != plugin.Hang || f.Call != "Attach" || !strings.Contains(f.Detail, "no answer within 1.8s") {
		t.Fatalf("hang-attach: got %v, want a hang during Attach after 1.8s (6× the call deadline)", err)
	}
	if took := time.Since(t0); took > 10*time.Second {
		t.Errorf("hang-attach: found after %v, want about 1.8s", took)
	}
}
