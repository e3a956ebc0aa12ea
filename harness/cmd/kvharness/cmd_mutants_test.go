package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/mutants"
	"github.com/kvharness/kvharness/harness/protocol"
	"github.com/kvharness/kvharness/harness/workload"
)

// A mutants run over the bundled plugins on --backend cuda passes over a
// plugin with no CUDA kernel (gostore serves the CPU only) and says so;
// the same plugin named with --plugin is an error about the backend.
func TestMutantsPassOverUnservedBackend(t *testing.T) {
	cfg := mutants.Config{Setup: kind.Setup{PageSize: layout.DefaultPageSize, HeadDim: layout.DefaultHeadDim, MaxCapacity: 64}, Cases: 20, Seed: 1}
	run := subjectRun{want: arena.Want{Backend: arena.WantCUDA}, anyDim: true, skipUnserved: true}
	rs, skip, err := run.of(context.Background(), nil, "gostore", cfg)
	if err != nil || len(rs) != 0 {
		t.Fatalf("bundled run over gostore on cuda: results %d, err %v; want it passed over", len(rs), err)
	}
	if skip == nil || skip.name != "gostore" || !slices.Equal(skip.served, []protocol.Backend{protocol.BackendSHM}) {
		t.Fatalf("passed over = %+v, want gostore serving [BACKEND_SHM]", skip)
	}
	run.skipUnserved = false
	_, skip, err = run.of(context.Background(), nil, "gostore", cfg)
	if !errors.Is(err, arena.ErrBackend) || skip != nil {
		t.Fatalf("gostore named on cuda: skip %+v, err %v; want an arena.ErrBackend error", skip, err)
	}
}

// Subjects start ahead in order, up to n processes ahead of the one
// running; a subject the run skips (start gives nil) takes no place, and
// what was started and not taken is dropped, cut short, at the end.
func TestLookaheadOrder(t *testing.T) {
	const n, subjects = 2, 8
	skipped := map[int]bool{2: true, 3: true, 6: true}
	var started []int
	cancelled := map[int]bool{}
	q := newLookahead(n, subjects, func(i int) *prestart {
		started = append(started, i)
		if skipped[i] {
			return nil
		}
		done := make(chan struct{})
		close(done)
		return &prestart{done: done, cancel: func() { cancelled[i] = true }}
	})
	want := [][]int{ // what take(i) has started, in all, by then
		0: {1, 2, 3, 4},
		1: {1, 2, 3, 4, 5},
		2: {1, 2, 3, 4, 5},
		3: {1, 2, 3, 4, 5},
		4: {1, 2, 3, 4, 5, 6, 7},
	}
	for i, w := range want {
		p := q.take(i)
		if !slices.Equal(started, w) {
			t.Fatalf("after take(%d) started %v, want %v", i, started, w)
		}
		if (p != nil) != (i > 0 && !skipped[i]) {
			t.Errorf("take(%d) = %v: want the process started ahead for every subject after the first that runs", i, p)
		}
		ahead := 0
		for _, p := range q.pre[i+1:] {
			if p != nil {
				ahead++
			}
		}
		if ahead > n {
			t.Errorf("after take(%d): %d processes ahead, want at most %d", i, ahead, n)
		}
	}
	q.drop()
	if !cancelled[5] || !cancelled[7] || len(cancelled) != 2 {
		t.Errorf("dropped %v, want subjects 5 and 7 (started, never taken)", cancelled)
	}
	if q.take(5) != nil {
		t.Error("a dropped subject's process was handed out")
	}
}

// Several subjects ahead, each warmed by its first row's target, give the
// verdicts a run without warm-ups gives (forced here on the CPU, where a
// GPU run alone warms), say so in --timings, and leave no process behind;
// nor does a run that stops at an error with warm-ups in flight.
func TestMutantsWarmAhead(t *testing.T) {
	quick(t)
	ctx := context.Background()
	cfg := mutants.Config{Setup: kind.Setup{PageSize: layout.DefaultPageSize, HeadDim: layout.DefaultHeadDim, MaxCapacity: 64,
		Draw: workload.Axes{HeadDim: true, PageSize: true, Heads: true}, Far: true}, Cases: 20, Seed: 1} // as a default run draws
	verdicts := func(rs []mutants.Result) []string {
		var out []string
		for _, r := range rs {
			out = append(out, fmt.Sprintf("%s/%s %v %s %s/%s %d %v", r.Plugin, r.Variant, r.Killed, r.Property, r.Layout, r.Label, r.Cases, r.Err))
		}
		return out
	}
	base := subjectRun{want: arena.Want{Backend: arena.WantCPU}, anyDim: true}
	want, _, err := base.of(ctx, nil, "bf16scatter", cfg)
	if err != nil {
		t.Fatal(err)
	}
	warmed := base
	warmed.ahead, warmed.times = ahead{n: 3, warm: true}, &subjectTimes{}
	got, _, err := warmed.of(ctx, nil, "bf16scatter", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(verdicts(got), verdicts(want)) || len(got) != 2 {
		t.Errorf("warmed ahead:\n%s\nwithout:\n%s", strings.Join(verdicts(got), "\n"), strings.Join(verdicts(want), "\n"))
	}
	var timings strings.Builder
	warmed.times.write(&timings)
	if n := strings.Count(timings.String(), "waited for the process started ahead, its first row's target opened and closed there in "); n != 1 {
		t.Errorf("%d subjects warmed ahead, want 1 (the second):\n%s", n, timings.String())
	}
	noChildren(t)

	// A pool too large for the machine stops the run at its first
	// subject, with three processes started ahead, their warm-ups
	// failing on the same pool.
	cfg.Slots = 2_000_000_000
	if _, _, err := warmed.of(ctx, nil, "fusedstore", cfg); err == nil {
		t.Fatal("fusedstore on a pool of 2e9 slots: no error")
	}
	noChildren(t)
}

// noChildren fails t when a process this one started still runs a few
// seconds on (a process killed a moment ago may take that long to go).
func noChildren(t *testing.T) {
	t.Helper()
	var left []string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		left = liveChildren()
		if len(left) == 0 {
			return
		}
	}
	t.Errorf("processes left running: %v", left)
}

// liveChildren are this process's child processes that have not exited,
// as /proc shows them: pid and command.
func liveChildren() []string {
	var out []string
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", os.Getpid()))
	for _, f := range files {
		data, _ := os.ReadFile(f)
		for _, pid := range strings.Fields(string(data)) {
			stat, err := os.ReadFile("/proc/" + pid + "/stat")
			if err != nil {
				continue
			}
			// pid (comm) state ...: a zombie has exited
			s := string(stat)
			if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) && s[i+2] != 'Z' {
				out = append(out, s[:i+1])
			}
		}
	}
	return out
}
