package plugin_test

import (
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/internal/plugintest"
)

// TestPanicKeepsStartAndOwnFrames: a plugin that panics inside its store
// is reported with the panic's message and the plugin's own frames, not
// with the last lines of its stderr (gRPC's frames).
func TestPanicKeepsStartAndOwnFrames(t *testing.T) {
	dir := plugintest.Dir(t)
	path := plugintest.Resolve(t, "faulty")
	f := provoke(t, dir, path, "panic")
	if f == nil || f.Panic == nil {
		t.Fatalf("fault %v has no crash report", f)
	}
	if !strings.Contains(f.Panic.Message, "panic: faulty: deliberate panic storing 2 rows") {
		t.Errorf("message %q: want the panic's own message", f.Panic.Message)
	}
	if len(f.Panic.Frames) == 0 || !strings.Contains(f.Panic.Frames[0].Func, "plugins/faulty/kernel.misbehave") ||
		!strings.HasSuffix(f.Panic.Frames[0].File, "faulty.go") {
		t.Fatalf("frames %v: want the plugin's misbehave first", f.Panic.Frames)
	}
	for _, fr := range f.Panic.Frames {
		if strings.Contains(fr.Func, "grpc") || strings.HasPrefix(fr.Func, "runtime.") || strings.Contains(fr.Func, "harness/sdk") {
			t.Errorf("frame %v is not the plugin's own", fr)
		}
	}
	if !strings.Contains(f.Stderr, "grpc") {
		t.Logf("stderr tail (no gRPC frames; the test's premise is weaker than it looks):\n%s", f.Stderr)
	}
	if msg := f.Error(); !strings.Contains(msg, "deliberate panic") || !strings.Contains(msg, "at github.com/kvharness/kvharness/plugins/faulty/kernel.misbehave") {
		t.Errorf("fault message does not show the panic:\n%s", msg)
	}
}
