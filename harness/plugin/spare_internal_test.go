package plugin

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kvharness/kvharness/harness/internal/fakesanitizer"
)

// startSpared starts fusedstore keeping a spare, and waits for the spare
// to be up.
func startSpared(t *testing.T) *Plugin {
	t.Helper()
	p := startWith(t, Options{SpareEnv: []string{"KVHARNESS_TEST_SPARE=1"}})
	if p.spare != nil {
		p.Close()
		t.Fatal("a spare started before KeepSpare")
	}
	p.KeepSpare(context.Background())
	if p.spare == nil {
		p.Close()
		t.Fatal("no spare started")
	}
	<-p.spare.done
	if p.spare.err != nil {
		p.Close()
		t.Fatalf("the spare did not start: %v", p.spare.err)
	}
	return p
}

// hasEnv reports whether the process r runs has kv in its environment.
func hasEnv(t *testing.T, r *groupRunner, kv string) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/" + r.ID() + "/environ")
	if err != nil {
		t.Skipf("cannot read a process's environment here: %v", err)
	}
	return slices.Contains(strings.Split(string(b), "\x00"), kv)
}

func exitedWithin(r *groupRunner, d time.Duration) bool {
	select {
	case <-r.exited:
		return true
	case <-time.After(d):
		return false
	}
}

// TestRestartAdoptsTheSpare: a restart runs the process started ahead of
// it, kills the old one, starts the next spare, and the adopted process
// answers; Close ends all three.
func TestRestartAdoptsTheSpare(t *testing.T) {
	p := startSpared(t)
	old, ready := p.runner, p.spare.p.runner
	if hasEnv(t, old, "KVHARNESS_TEST_SPARE=1") || !hasEnv(t, ready, "KVHARNESS_TEST_SPARE=1") {
		t.Fatal("Options.SpareEnv must reach the spare's environment and only the spare's")
	}
	if err := p.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	if p.runner != ready {
		t.Fatalf("the restarted plugin runs process %s; want the spare %s", p.runner.ID(), ready.ID())
	}
	if !exitedWithin(old, 5*time.Second) {
		t.Fatalf("the old process %s still runs after the restart", old.ID())
	}
	if _, err := p.Describe(context.Background(), Query{}); err != nil {
		t.Fatalf("the adopted process does not answer: %v", err)
	}
	if p.spare == nil {
		t.Fatal("no next spare after the restart")
	}
	<-p.spare.done
	next := p.spare.p.runner
	if next == ready {
		t.Fatal("the next spare is the adopted process")
	}
	p.Close()
	for _, r := range []*groupRunner{ready, next} {
		if !exitedWithin(r, 5*time.Second) {
			t.Errorf("process %s still runs after Close", r.ID())
		}
	}
}

// TestDeadSpareIsNotAdopted: a spare that died while it waited is not
// handed a restart; a process started then is, and answers.
func TestDeadSpareIsNotAdopted(t *testing.T) {
	p := startSpared(t)
	defer p.Close()
	dead := p.spare.p.runner
	if err := dead.Kill(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-dead.exited
	if err := p.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	if p.runner == dead {
		t.Fatal("the restart adopted the dead spare")
	}
	if _, err := p.Describe(context.Background(), Query{}); err != nil {
		t.Fatalf("the restarted plugin does not answer: %v", err)
	}
}

// TestSanitizedPluginKeepsNoSpare: every process of a sanitized plugin
// must run under the sanitizer, so it keeps no spare started without.
func TestSanitizedPluginKeepsNoSpare(t *testing.T) {
	exe, tmp := fakesanitizer.Write(t)
	p := startWith(t, Options{Sanitizer: &Sanitizer{Tool: "memcheck", Exe: exe, Logs: tmp}})
	defer p.Close()
	p.KeepSpare(context.Background())
	if err := p.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	if p.spare != nil {
		t.Fatal("a sanitized plugin keeps a spare")
	}
}

// TestSlowStart: a plugin run as an interpreter on a script (Python) is
// slow to start, so runs keep a spare of it on the CPU too; a binary is
// not, and neither is a plugin not started at all.
func TestSlowStart(t *testing.T) {
	script := filepath.Join(t.TempDir(), "plugin.py")
	os.WriteFile(script, []byte("pass\n"), 0o644)
	for _, tc := range []struct {
		p    *Plugin
		slow bool
	}{
		{&Plugin{spec: Spec{Argv: []string{"/usr/bin/python3", script}}}, true},
		{&Plugin{spec: Spec{Argv: []string{"/bin/true"}}}, false},
		{nil, false},
	} {
		if got := tc.p.SlowStart(); got != tc.slow {
			t.Errorf("%v: SlowStart %v, want %v", tc.p, got, tc.slow)
		}
	}
}
