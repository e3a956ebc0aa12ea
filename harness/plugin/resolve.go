package plugin

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// Module is the module path that marks the kvharness source tree.
const Module = "github.com/kvharness/kvharness"

// ErrNotFound is returned when a plugin name or path leads nowhere.
var ErrNotFound = errors.New("plugin not found")

// Resolve turns a plugin argument into an executable path. A path (or any
// argument with a slash) is used as is. A bundled name is found, in order,
// in $KVHARNESS_PLUGIN_DIR, built from the source tree into the user cache
// when the kvharness source and a Go toolchain are at hand, next to the
// running executable, and on PATH as kvharness-NAME.
func Resolve(arg string) (string, error) {
	if strings.ContainsRune(arg, '/') || !IsBundled(arg) {
		return resolvePath(arg)
	}
	if dir := os.Getenv("KVHARNESS_PLUGIN_DIR"); dir != "" {
		if p, ok := executable(filepath.Join(dir, arg)); ok {
			return p, nil
		}
	}
	if root, ok := SourceRoot(); ok {
		if _, err := exec.LookPath("go"); err == nil {
			return build(root, arg)
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
	return "", fmt.Errorf("%w: bundled plugin %q is not built and no kvharness source tree with a Go toolchain is here; "+
		"run `go build -o DIR/%s ./plugins/%s` and set KVHARNESS_PLUGIN_DIR=DIR", ErrNotFound, arg, arg, arg)
}

func resolvePath(arg string) (string, error) {
	p, ok := executable(arg)
	if !ok {
		return "", fmt.Errorf("%w: %q is neither a bundled plugin (%s) nor an executable file",
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

// SourceRoot finds the kvharness source tree above the working directory.
func SourceRoot() (string, bool) {
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		if isRoot(dir) {
			return dir, true
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", false
		}
		dir = up
	}
}

func isRoot(dir string) bool {
	f, err := os.Open(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	return s.Scan() && strings.TrimSpace(s.Text()) == "module "+Module
}

var buildMu sync.Mutex

// build compiles a bundled plugin into the user cache. go build's own
// cache makes a rebuild of an unchanged plugin cheap.
func build(root, name string) (string, error) {
	buildMu.Lock()
	defer buildMu.Unlock()
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	out := filepath.Join(cache, "kvharness", "plugins", name)
	// Build beside the target and rename: another harness may be running
	// the old binary, and a rename never disturbs it.
	tmp := fmt.Sprintf("%s.build-%d", out, os.Getpid())
	cmd := exec.Command("go", "build", "-o", tmp, "./plugins/"+name)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("build plugin %s: %v\n%s", name, err, stderr.String())
	}
	if err := os.Rename(tmp, out); err != nil {
		return "", fmt.Errorf("install plugin %s: %w", name, err)
	}
	return out, nil
}
