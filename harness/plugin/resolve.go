package plugin

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/kvharness/kvharness/harness/internal/gobuild"
)

// Module is the module path that marks the kvharness source tree.
const Module = gobuild.Module

// ErrNotFound is returned when a plugin name or path leads nowhere.
var ErrNotFound = errors.New("plugin not found")

// Resolve turns a plugin argument into an executable path. A path (or any
// argument with a slash) is used as is. A bundled name is found, in order,
// in $KVHARNESS_PLUGIN_DIR, built into the user cache from the kvharness
// source tree this binary was built from (or the one --plugin-source
// names; see SourceRoot) when a Go toolchain is at hand, next to the
// running executable, and on PATH as kvharness-NAME. The working
// directory is never a source of code: a bundled name run in someone
// else's folder runs kvharness's own plugin. A build cache that cannot
// hold the binary is passed over, not fatal: the binary's own plugins
// (ResolveSpec) still serve.
func Resolve(arg string) (string, error) {
	if strings.ContainsRune(arg, '/') || !IsBundled(arg) {
		return resolvePath(arg)
	}
	if dir := os.Getenv("KVHARNESS_PLUGIN_DIR"); dir != "" {
		if p, ok := executable(filepath.Join(dir, arg)); ok {
			return p, nil
		}
	}
	var cacheErr error
	if root, ok := SourceRoot(); ok {
		if _, err := exec.LookPath("go"); err == nil {
			p, err := build(root, arg)
			if !errors.Is(err, gobuild.ErrCache) {
				return p, err
			}
			cacheErr = err
		}
	}
	if exe, err := os.Executable(); err == nil {
		for _, name := range []string{arg, "kvharness-" + arg} {
			if p, ok := executable(filepath.Join(filepath.Dir(exe), name)); ok {
				return p, nil
			}
		}
	}
	if p, err := exec.LookPath("kvharness-" + arg); err == nil {
		return filepath.Abs(p)
	}
	if cacheErr != nil {
		return "", fmt.Errorf("%w: %w; make the cache writable (or set XDG_CACHE_HOME), or set KVHARNESS_PLUGIN_DIR to a folder of built plugins", ErrNotFound, cacheErr)
	}
	return "", fmt.Errorf("%w: bundled plugin %q is not built and kvharness was not built from a source tree at hand (give --plugin-source DIR to build from one); "+
		"run `go build -o DIR/%s ./plugins/%s` and set KVHARNESS_PLUGIN_DIR=DIR", ErrNotFound, arg, arg, arg)
}

func resolvePath(arg string) (string, error) {
	p, ok := executable(arg)
	if !ok {
		return "", fmt.Errorf("%w: %q is neither a bundled plugin (%s) nor an executable file; give a bundled name or the path of a plugin binary",
			ErrNotFound, arg, strings.Join(BundledNames(), ", "))
	}
	return p, nil
}

func executable(path string) (string, bool) {
	st, err := os.Stat(path)
	if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		return "", false
	}
	abs, err := filepath.Abs(path)
	return abs, err == nil
}

// SourceRoot is the kvharness source tree bundled plugins are built from:
// the one kvharness was built from, or the one $KVHARNESS_SOURCE names
// (package gobuild); never the working directory.
func SourceRoot() (string, bool) { return gobuild.SourceRoot() }

// SourceEnv names the environment variable that points kvharness (and a
// kind's out-of-process fuzz lane, which builds kvharness) at a source
// tree: a test binary built with -trimpath records none of its own.
const SourceEnv = gobuild.SourceEnv

// build compiles a bundled plugin into the user cache (package gobuild).
func build(root, name string) (string, error) {
	return gobuild.Build(root, "./plugins/"+name, name)
}
