// Package plugintest starts real plugin processes for tests: a private run
// directory and the plugin, both cleaned up when the test ends.
package plugintest

import (
	"context"
	"testing"

	"github.com/kvharness/kvharness/harness/internal/fakesanitizer"
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

// Resolve resolves (building if need be) a bundled plugin, or the plugin
// at a path, and returns its path; the test fails if it cannot.
func Resolve(t testing.TB, name string) string {
	t.Helper()
	path, err := plugin.Resolve(name)
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// Start resolves (building if need be) and starts a bundled plugin, or
// the plugin at a path, in a fresh run directory.
func Start(t testing.TB, name string) (*plugin.Plugin, *rundir.Dir) {
	t.Helper()
	dir := Dir(t)
	p, err := plugin.Start(context.Background(), name, Resolve(t, name), plugin.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p, dir
}

// FakeSanitizer returns a sanitizer whose executable is a shell script
// that behaves as compute-sanitizer does around its application, for
// tests on machines without one.
func FakeSanitizer(t testing.TB) *plugin.Sanitizer {
	t.Helper()
	exe, dir := fakesanitizer.Write(t)
	return &plugin.Sanitizer{Tool: "memcheck", Exe: exe, Logs: dir}
}
