package plugin

import (
	"context"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/internal/fakesanitizer"
	"github.com/kvharness/kvharness/harness/rundir"
)

func startUnder(t *testing.T, san *Sanitizer) *Plugin {
	t.Helper()
	return startWith(t, Options{Sanitizer: san})
}

// startWith starts fusedstore with opts, in a run directory of its own.
func startWith(t *testing.T, opts Options) *Plugin {
	t.Helper()
	path, err := Resolve("fusedstore")
	if err != nil {
		t.Skip(err)
	}
	dir, err := rundir.Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dir.Close() })
	opts.Dir = dir
	p, err := Start(context.Background(), "fusedstore", path, opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCloseLetsTheSanitizerFinish: a plugin is asked to exit before it is
// killed, so a sanitizer wrapped around it writes what it writes at exit;
// the record is kept for the plugin and the handshake survived the
// sanitizer's banner on stdout.
func TestCloseLetsTheSanitizerFinish(t *testing.T) {
	exe, tmp := fakesanitizer.Write(t)
	san := &Sanitizer{Tool: "memcheck", Exe: exe, Logs: tmp}
	p := startUnder(t, san)
	if fs := p.SanitizerFindings(); len(fs) != 0 {
		t.Errorf("findings before exit: %v", fs)
	}
	p.Close()
	if d := p.runner.exitDetail(); d != "process exited with status 0" {
		t.Errorf("the sanitized process ended with %q: want a clean exit, not a kill", d)
	}
	if fs := p.SanitizerFindings(); len(fs) != 0 {
		t.Errorf("findings of the running process after it exited: %v", fs)
	}
	fs := p.ExitedFindings()
	if len(fs) != 1 || fs[0].Kernel != "fake_store" || !strings.Contains(fs[0].String(), "out of bounds") {
		t.Fatalf("findings after exit: %v; want the record written at exit", fs)
	}
	if left := san.Orphans(); len(left) != 0 {
		t.Errorf("claimed findings are still orphans: %v", left)
	}
}

// TestCloseIsGraceful: an unsanitized plugin exits on its own when
// closed, rather than by SIGKILL.
func TestCloseIsGraceful(t *testing.T) {
	p := startUnder(t, nil)
	p.Close()
	if d := p.runner.exitDetail(); d != "process exited with status 0" {
		t.Errorf("closed plugin ended with %q, want a clean exit", d)
	}
}

// TestRestartKillsAtOnce: a restart does not wait for the old process's
// graceful exit (on a GPU, a context's teardown): the old process is
// killed, the new one is another process, and it answers.
func TestRestartKillsAtOnce(t *testing.T) {
	p := startUnder(t, nil)
	defer p.Close()
	old := p.runner
	if err := p.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-old.exited
	if d := old.exitDetail(); d != "process killed by signal killed" {
		t.Errorf("the old process ended with %q, want a kill", d)
	}
	if p.runner == old || p.runner.ID() == old.ID() {
		t.Fatalf("the restarted plugin runs process %s, the old one", old.ID())
	}
	if _, err := p.Describe(context.Background(), Query{}); err != nil {
		t.Fatalf("the fresh process does not answer: %v", err)
	}
}

// TestSanitizedRestartIsGraceful: under a sanitizer the old process is
// still asked to exit, so that the sanitizer writes its record.
func TestSanitizedRestartIsGraceful(t *testing.T) {
	exe, tmp := fakesanitizer.Write(t)
	p := startUnder(t, &Sanitizer{Tool: "memcheck", Exe: exe, Logs: tmp})
	defer p.Close()
	old := p.runner
	if err := p.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := old.exitDetail(); d != "process exited with status 0" {
		t.Errorf("the old sanitized process ended with %q, want a clean exit", d)
	}
}
