// Package fakesanitizer writes a stand-in for compute-sanitizer, for tests
// on machines without one. It is a leaf package so that the plugin
// package's own tests and plugintest (which imports the plugin package)
// share one script.
package fakesanitizer

import (
	"os"
	"path/filepath"
	"testing"
)

// script stands in for compute-sanitizer with its command line: it runs
// the application after "--", prints its banner to stdout and its log,
// and writes one memcheck record and the summary to the log once the
// application has exited (as the real one writes what it has left).
const script = `#!/bin/sh
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

// Write puts the executable "compute-sanitizer" into a fresh temporary
// directory of the test and returns its path and the directory (where
// its logs may go too).
func Write(t testing.TB) (exe, dir string) {
	t.Helper()
	dir = t.TempDir()
	exe = filepath.Join(dir, "compute-sanitizer")
	if err := os.WriteFile(exe, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return exe, dir
}
