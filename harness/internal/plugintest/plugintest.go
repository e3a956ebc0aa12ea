// Package plugintest starts real plugin processes for tests: a private run
// directory and the plugin, both cleaned up when the test ends.
package plugintest

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/rundir"
)

// Dir opens a run directory removed when the test ends.
func Dir(t testing.TB) *rundir.Dir {
	t.Helper()
	dir, err := rundir.Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dir.Close() })
	return dir
}

// Start resolves (building if need be) and starts a bundled plugin, or
// the plugin at a path, in a fresh run directory.
func Start(t testing.TB, name string) (*plugin.Plugin, *rundir.Dir) {
	t.Helper()
	dir := Dir(t)
	path, err := plugin.Resolve(name)
	if err != nil {
		t.Fatal(err)
	}
	p, err := plugin.Start(context.Background(), name, path, plugin.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p, dir
}

// fakeSanitizer stands in for compute-sanitizer with its command line: it
// runs the application after "--", prints its banner to stdout and its
// log, and writes one memcheck record and the summary to the log once the
// application has exited (as the real one writes what it has left).
const fakeSanitizer = `#!/bin/sh
log=""
while [ "$1" != "--" ]; do
	if [ "$1" = "--log-file" ]; then log="$2"; shift; fi
	shift
done
shift
echo "========= COMPUTE-SANITIZER"
echo "========= COMPUTE-SANITIZER" > "$log"
"$@"
rc=$?
printf '========= Invalid __global__ write of size 4 bytes\n=========     at fake_store+0x10\n=========     by thread (0,0,0) in block (0,0,0)\n=========     Address 0x10 is out of bounds\n=========\n========= ERROR SUMMARY: 1 error\n' >> "$log"
exit $rc
`

// FakeSanitizer returns a sanitizer whose executable is a shell script
// that behaves as compute-sanitizer does around its application, for
// tests on machines without one.
func FakeSanitizer(t testing.TB) *plugin.Sanitizer {
	t.Helper()
	dir := t.TempDir()
	exe := filepath.Join(dir, "compute-sanitizer")
	if err := os.WriteFile(exe, []byte(fakeSanitizer), 0o755); err != nil {
		t.Fatal(err)
	}
	return &plugin.Sanitizer{Tool: "memcheck", Exe: exe, Logs: dir}
}
