package plugin

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"
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

// build compiles a bundled plugin into the user cache, under a key of the
// source tree it is built from: a binary is reused only by a tree with the
// same sources (and toolchain), so two checkouts never run each other's
// plugins, and an unchanged tree builds each plugin once, not once per
// process.
func build(root, name string) (string, error) {
	buildMu.Lock()
	defer buildMu.Unlock()
	key, err := sourceKey(root)
	if err != nil {
		return "", fmt.Errorf("build plugin %s: hash the source tree: %w", name, err)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	out := filepath.Join(cache, "kvharness", "plugins", key, name)
	if _, ok := executable(out); ok {
		return out, nil
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return "", fmt.Errorf("build plugin %s: %w", name, err)
	}
	// Build beside the target and rename: another harness may be building
	// the same binary, and a rename never disturbs a reader.
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
	prune(filepath.Dir(filepath.Dir(out)), keptTrees)
	return out, nil
}

// keptTrees is how many source trees' plugin builds the cache keeps: a
// few checkouts, or a few recent edits of one.
const keptTrees = 6

// prune removes all but the keep most recently built trees' plugins. A
// plugin that is running keeps running (its file is only unlinked); one
// that is looked up again is built again.
func prune(dir string, keep int) {
	entries, _ := os.ReadDir(dir)
	type tree struct {
		path string
		mod  time.Time
	}
	var trees []tree
	for _, e := range entries {
		if info, err := e.Info(); err == nil && e.IsDir() {
			trees = append(trees, tree{filepath.Join(dir, e.Name()), info.ModTime()})
		}
	}
	sort.Slice(trees, func(i, j int) bool { return trees[i].mod.After(trees[j].mod) })
	for _, t := range trees[min(keep, len(trees)):] {
		os.RemoveAll(t.path)
	}
}

// sourceKey hashes what a bundled plugin's binary follows from: every
// source file of the module (go.mod, go.sum, Go, CUDA and C files, test
// files and test data aside), the toolchain and the build environment.
// Hashing the whole module is more than one plugin needs, and cheap: a
// change anywhere rebuilds, which go build's own cache makes quick.
func sourceKey(root string) (string, error) {
	h := sha256.New()
	fmt.Fprintln(h, runtime.Version(), runtime.GOOS, runtime.GOARCH, os.Getenv("CGO_ENABLED"), os.Getenv("GOFLAGS"))
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" || name == "dist") {
				return filepath.SkipDir
			}
			return nil
		}
		if !sourceFile(name) {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		fmt.Fprintf(h, "%s %d\n", rel, len(data))
		h.Write(data)
		return nil
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)[:8]), nil
}

func sourceFile(name string) bool {
	if strings.HasSuffix(name, "_test.go") {
		return false
	}
	switch filepath.Ext(name) {
	case ".go", ".cu", ".cuh", ".c", ".h", ".s":
		return true
	}
	return name == "go.mod" || name == "go.sum"
}
