// Package gobuild builds binaries of the kvharness source tree into the
// user cache, keyed by the sources they are built from: the bundled
// plugins, and the kvharness binary a fuzz worker hands its inputs to. A
// binary is reused only by a tree with the same sources (and toolchain),
// so two checkouts never run each other's binaries, and an unchanged tree
// builds each once, not once per process. It imports the standard library
// alone: a fuzz target's test binary links it, and every package linked
// there costs that binary's fuzz engine time on every input.
package gobuild

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
	"syscall"
	"time"
)

// Module is the module path that marks the kvharness source tree.
const Module = "github.com/kvharness/kvharness"

// SourceEnv names the environment variable that points kvharness at a
// source tree to build bundled plugins from, other than the one it was
// built from (kvharness's --plugin-source sets it).
const SourceEnv = "KVHARNESS_SOURCE"

// SourceRoot is the kvharness source tree bundled plugins are built from:
// the tree named by $KVHARNESS_SOURCE when it is set (an explicit choice),
// else the tree this binary was compiled from, found by the path the
// compiler recorded for this file, when that tree is still there. It never
// looks at the working directory: a folder the user stands in (a bug
// report's, say) may hold anyone's go.mod and plugins/, and building
// from it would run their code. A binary built with -trimpath records no
// tree; its bundled plugins come from the binary itself (serve-plugin).
func SourceRoot() (string, bool) {
	if dir := os.Getenv(SourceEnv); dir != "" {
		abs, err := filepath.Abs(dir)
		return abs, err == nil && isRoot(abs)
	}
	return BuiltFrom()
}

// BuiltFrom is the source tree this binary was compiled from, when the
// compiler recorded it (no -trimpath) and it is still a kvharness tree.
func BuiltFrom() (string, bool) {
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return "", false
	}
	root := filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(file)))) // harness/internal/gobuild/gobuild.go
	return root, isRoot(root)
}

// CheckRoot reports why dir is not a kvharness source tree, for a user
// who named it.
func CheckRoot(dir string) error {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fmt.Errorf("%s is not a folder", dir)
	}
	if !isRoot(dir) {
		return fmt.Errorf("%s holds no go.mod of module %s", dir, Module)
	}
	return nil
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

var mu sync.Mutex

// ErrCache is wrapped by Build's error when the user cache cannot hold the
// binary (not writable, full): the sources may be fine, and a caller may
// take the binary from elsewhere.
var ErrCache = errors.New("the build cache cannot hold it")

// Building, when set, is told of each build as it starts, and the func it
// returns as it ends: the kvharness command says what it builds, since a
// checkout's first build takes minutes and nothing else would show.
var Building func(name string) (done func(error))

// Build compiles the package pkg (as ./plugins/NAME, relative to root)
// into the cache as name, unless the cache holds it for these sources
// already, and returns its path. Processes building the same binary take
// turns (a file lock), so the second finds the first's.
func Build(root, pkg, name string) (string, error) {
	mu.Lock()
	defer mu.Unlock()
	key, err := treeKey(root)
	if err != nil {
		return "", fmt.Errorf("build %s: hash the source tree: %w", name, err)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	out := filepath.Join(cache, "kvharness", "plugins", key, name)
	if executable(out) {
		now := time.Now() // a tree in use is a recent one: prune keeps it
		os.Chtimes(filepath.Dir(out), now, now)
		return out, nil
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return "", fmt.Errorf("build %s: %w: %w", name, ErrCache, err)
	}
	unlock, err := lock(out + ".lock")
	if err != nil {
		return "", fmt.Errorf("build %s: %w: %w", name, ErrCache, err)
	}
	defer unlock()
	if executable(out) { // built while this one waited
		return out, nil
	}
	// Build beside the target and rename: a rename never disturbs a
	// reader.
	tmp := fmt.Sprintf("%s.build-%d", out, os.Getpid())
	cmd := exec.Command("go", "build", "-o", tmp, pkg)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	done := func(error) {}
	if Building != nil {
		done = Building(name)
	}
	err = cmd.Run()
	done(err)
	if err != nil {
		os.Remove(tmp)
		if !writable(filepath.Dir(out)) { // the output could not be written: the cache, not the sources
			return "", fmt.Errorf("build %s: %w: %v", name, ErrCache, err)
		}
		if out := bytes.TrimSpace(stderr.Bytes()); len(out) > 0 {
			return "", fmt.Errorf("build %s: %v\n%s", name, err, out)
		}
		return "", fmt.Errorf("build %s: %v", name, err)
	}
	if err := os.Rename(tmp, out); err != nil {
		return "", fmt.Errorf("install %s: %w: %w", name, ErrCache, err)
	}
	prune(filepath.Dir(filepath.Dir(out)), keptTrees)
	return out, nil
}

// lock takes an exclusive lock on path, created if need be, until the
// returned function runs.
func lock(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}

// writable reports whether this user may create files in dir.
func writable(dir string) bool { return syscall.Access(dir, 0x2|0x1) == nil }

func executable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// keptTrees is how many source trees' builds the cache keeps: a few
// checkouts, or a few recent edits of one. A tree built or looked up in
// the last keptFor is kept whatever their number: a test run in one
// checkout must not lose the binary it just resolved to builds in others.
const (
	keptTrees = 6
	keptFor   = time.Hour
)

// prune removes all but the keep most recently used trees' binaries, and
// any used within keptFor. A binary that is running keeps running (its
// file is only unlinked); one that is looked up again is built again.
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
		if time.Since(t.mod) > keptFor {
			os.RemoveAll(t.path)
		}
	}
}

// sourceKey hashes what a binary of the tree follows from: every source
// file of the module (go.mod, go.sum, Go, CUDA and C files, test files
// and test data aside), the toolchain and the build environment. Hashing
// the whole module is more than one binary needs, and cheap: a change
// anywhere rebuilds, which go build's own cache makes quick.
func sourceKey(root string) (string, error) {
	h := sha256.New()
	fmt.Fprintln(h, buildEnv())
	err := walkSources(root, func(rel, path string, _ fs.DirEntry) error {
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %d\n", rel, len(data))
		h.Write(data)
		return nil
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)[:8]), nil
}

// buildEnv is what of the toolchain and environment a binary follows from.
func buildEnv() string {
	return fmt.Sprintln(runtime.Version(), runtime.GOOS, runtime.GOARCH, os.Getenv("CGO_ENABLED"), os.Getenv("GOFLAGS"))
}

// walkSources calls f with each source file of the tree at root (see
// sourceKey), in a fixed order, with its path relative to root.
func walkSources(root string, f func(rel, path string, d fs.DirEntry) error) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
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
		rel, _ := filepath.Rel(root, path)
		return f(rel, path, d)
	})
}

// keys remembers each tree's source key with the stamp of its files it was
// hashed under: a process that resolves bundled plugins again and again (a
// check resolves its plugin per run, a test binary hundreds of times)
// reads and hashes the tree once, and after that only stats it, a fifth of
// the cost. Any file changed, added or removed since is another stamp, and
// the tree is hashed again.
var keys = struct {
	sync.Mutex
	m map[string]stampedKey
}{m: map[string]stampedKey{}}

type stampedKey struct {
	stamp [sha256.Size]byte
	key   string
}

// treeKey is sourceKey, answered from keys while the tree's stamp is
// the one it was hashed under.
func treeKey(root string) (string, error) {
	st, settled, err := stamp(root)
	if err != nil {
		return "", err
	}
	keys.Lock()
	k, ok := keys.m[root]
	keys.Unlock()
	if ok && k.stamp == st {
		return k.key, nil
	}
	// Stamped before hashed: a file changed between the two leaves the
	// stamp of the older content, which the next stamp no longer matches.
	key, err := sourceKey(root)
	if err != nil {
		return "", err
	}
	if settled {
		keys.Lock()
		keys.m[root] = stampedKey{st, key}
		keys.Unlock()
	}
	return key, nil
}

// settleTime is how long ago a tree's last change must be for its stamp to
// stand for its content: a file's times move in clock ticks of a few
// milliseconds, so two writes of one size within a tick share a stamp.
var settleTime = 2 * time.Second

// stamp hashes what a tree's source files look like from outside (each
// one's path, size, inode and modification and change times, and the
// build environment), and reports whether none changed within settleTime.
func stamp(root string) (sum [sha256.Size]byte, settled bool, err error) {
	h := sha256.New()
	fmt.Fprintln(h, buildEnv())
	now := time.Now()
	settled = true
	err = walkSources(root, func(rel, _ string, d fs.DirEntry) error {
		info, err := d.Info()
		if err != nil {
			return err
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		if !ok {
			return fmt.Errorf("stat %s: no inode", rel)
		}
		mtime, ctime := time.Unix(st.Mtim.Unix()), time.Unix(st.Ctim.Unix())
		if now.Sub(mtime) < settleTime || now.Sub(ctime) < settleTime {
			settled = false
		}
		fmt.Fprintf(h, "%s %d %d %d %d\n", rel, st.Size, st.Ino, mtime.UnixNano(), ctime.UnixNano())
		return nil
	})
	h.Sum(sum[:0])
	return sum, settled, err
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
