// Package plugintest starts real plugin processes for tests: a private run
// directory and the plugin, both cleaned up when the test ends.
package plugintest

import (
	"context"
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
