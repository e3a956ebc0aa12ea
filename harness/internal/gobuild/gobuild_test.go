package gobuild

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// tree writes a small module: what sourceKey hashes, and what it passes
// over (tests, test data, hidden folders).
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, body := range files {
		path := filepath.Join(root, name)
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// TestSourceKeyFollowsSources: two trees with the same sources share a key
// (their plugins are the same binaries); a change to any source gives
// another; tests, test data and hidden folders do not count.
func TestSourceKeyFollowsSources(t *testing.T) {
	base := map[string]string{"go.mod": "module x\n", "plugins/p/main.go": "package main\n", "k.cu": "// kernel\n"}
	key := func(extra map[string]string) string {
		files := map[string]string{}
		for k, v := range base {
			files[k] = v
		}
		for k, v := range extra {
			files[k] = v
		}
		k, err := sourceKey(tree(t, files))
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	a := key(nil)
	if b := key(nil); a != b {
		t.Errorf("identical trees: keys %s and %s", a, b)
	}
	for name, body := range map[string]string{"plugins/p/main.go": "package main // edited\n", "k.cu": "// other kernel\n",
		"go.sum": "x v1 h1:\n"} {
		if k := key(map[string]string{name: body}); k == a {
			t.Errorf("editing %s kept the key %s", name, a)
		}
	}
	for name, body := range map[string]string{"plugins/p/main_test.go": "package main\n", "testdata/x.go": "package x\n",
		".git/HEAD": "ref\n", "README.md": "words\n"} {
		if k := key(map[string]string{name: body}); k != a {
			t.Errorf("adding %s changed the key", name)
		}
	}
}

// TestPruneKeepsRecentTrees: the cache keeps the most recently used
// trees' plugins, and any used within the hour, and removes the rest.
func TestPruneKeepsRecentTrees(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	for name, age := range map[string]time.Duration{"old": 5 * time.Hour, "mid": 4 * time.Hour, "new": 3 * time.Hour,
		"in-use-a": 20 * time.Minute, "in-use-b": 10 * time.Minute, "in-use-c": time.Minute} {
		p := filepath.Join(dir, name)
		os.Mkdir(p, 0o755)
		os.Chtimes(p, now, now.Add(-age))
	}
	prune(dir, 4)
	// The four most recent stay (new among them, though hours old), and so
	// does every tree used within the hour; the rest go.
	for name, kept := range map[string]bool{"old": false, "mid": false, "new": true, "in-use-a": true, "in-use-b": true, "in-use-c": true} {
		if _, err := os.Stat(filepath.Join(dir, name)); (err == nil) != kept {
			t.Errorf("%s: kept %v, want %v", name, err == nil, kept)
		}
	}
}

// TestSourceRootIgnoresWorkingDirectory: standing in a folder whose go.mod
// claims kvharness's module, SourceRoot is still the tree this test was
// built from; only SourceEnv names another.
func TestSourceRootIgnoresWorkingDirectory(t *testing.T) {
	own, ok := BuiltFrom()
	if !ok {
		t.Skip("built with -trimpath: no source tree recorded")
	}
	hostile := tree(t, map[string]string{"go.mod": "module " + Module + "\n", "plugins/bf16scatter/main.go": "package main\n"})
	t.Chdir(hostile)
	t.Setenv(SourceEnv, "")
	os.Unsetenv(SourceEnv)
	if root, ok := SourceRoot(); !ok || root != own {
		t.Errorf("in %s: SourceRoot %q %v, want the tree built from, %s", hostile, root, ok, own)
	}
	t.Setenv(SourceEnv, hostile)
	if root, ok := SourceRoot(); !ok || root != hostile {
		t.Errorf("%s=%s: SourceRoot %q %v", SourceEnv, hostile, root, ok)
	}
	t.Setenv(SourceEnv, t.TempDir())
	if _, ok := SourceRoot(); ok {
		t.Errorf("%s naming a folder without kvharness's go.mod was taken", SourceEnv)
	}
}

// TestTreeKeyFollowsEdits: the key remembered for a tree's stamp is the
// tree's hash however it is edited (a file rewritten at its old size and
// modification time, added, removed), and a tree changed within the last
// settleTime is hashed every time, not remembered.
func TestTreeKeyFollowsEdits(t *testing.T) {
	root := tree(t, map[string]string{"go.mod": "module x\n", "plugins/p/main.go": "package main\n"})
	if _, err := treeKey(root); err != nil {
		t.Fatal(err)
	}
	if _, ok := keys.m[root]; ok {
		t.Fatalf("a tree written just now was remembered")
	}
	defer func(d time.Duration) { settleTime = d }(settleTime)
	settleTime = 0
	check := func(what string) string {
		t.Helper()
		got, err := treeKey(root)
		if err != nil {
			t.Fatal(err)
		}
		want, err := sourceKey(root)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s: key %s, want the tree's hash %s", what, got, want)
		}
		if _, ok := keys.m[root]; !ok {
			t.Errorf("%s: the key was not remembered", what)
		}
		return got
	}
	main := filepath.Join(root, "plugins", "p", "main.go")
	before := check("first")
	time.Sleep(20 * time.Millisecond) // past the clock tick of the first write
	st, _ := os.Stat(main)
	os.WriteFile(main, []byte("package niam\n"), 0o644)
	os.Chtimes(main, st.ModTime(), st.ModTime())
	edited := check("rewritten at its size and time")
	if edited == before {
		t.Errorf("an edit kept the key %s", before)
	}
	os.WriteFile(filepath.Join(root, "plugins", "p", "more.go"), []byte("package main\n"), 0o644)
	added := check("a file added")
	os.Remove(filepath.Join(root, "plugins", "p", "more.go"))
	if removed := check("the file removed"); removed == added || removed != edited {
		t.Errorf("removing the added file: key %s; want %s again", removed, edited)
	}
}

func BenchmarkSourceKey(b *testing.B) {
	root, ok := BuiltFrom()
	if !ok {
		b.Skip("not built from a kvharness tree")
	}
	for b.Loop() {
		if _, err := sourceKey(root); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTreeKey is a Build's cost of knowing its tree's key, once the
// tree was hashed: a stat of every source file.
func BenchmarkTreeKey(b *testing.B) {
	root, ok := BuiltFrom()
	if !ok {
		b.Skip("not built from a kvharness tree")
	}
	defer func(d time.Duration) { settleTime = d }(settleTime)
	settleTime = 0 // the tree may be fresh from an edit
	for b.Loop() {
		if _, err := treeKey(root); err != nil {
			b.Fatal(err)
		}
	}
}
