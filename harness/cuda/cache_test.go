package cuda

import (
	"bytes"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestCacheKeyStable(t *testing.T) {
	k := cacheKey("src", []string{"-O3"}, "sm_90")
	if k != cacheKey("src", []string{"-O3"}, "sm_90") {
		t.Fatal("same inputs gave different keys")
	}
	// The golden value (computed independently, in Python) pins the format: changing it silently orphans every
	// cached cubin, so do it only on purpose (and bump the version field).
	const golden = "c2b2fb1b53c2f935a10048036e453b6449d493c90ba1edfd1081fde8ab2537e6"
	if got := hex.EncodeToString(k[:]); got != golden {
		t.Errorf("cacheKey = %s; want %s", got, golden)
	}
}

func TestCacheKeySensitive(t *testing.T) {
	base := cacheKey("src", []string{"-O3"}, "sm_90")
	variants := map[string][32]byte{
		"source":        cacheKey("src2", []string{"-O3"}, "sm_90"),
		"option":        cacheKey("src", []string{"-O2"}, "sm_90"),
		"no option":     cacheKey("src", nil, "sm_90"),
		"arch":          cacheKey("src", []string{"-O3"}, "sm_80"),
		"field overlap": cacheKey("-O3src", nil, "sm_90"),
		"split option":  cacheKey("src", []string{"-O", "3"}, "sm_90"),
	}
	for name, k := range variants {
		if k == base {
			t.Errorf("changing the %s left the key unchanged", name)
		}
	}
}

func TestCubinCacheDisk(t *testing.T) {
	dir := t.TempDir()
	key := cacheKey("kernel", nil, "sm_90")
	want := []byte("cubin bytes")
	compile := func() ([]byte, error) { return want, nil }

	c1 := newCubinCache(dir)
	got, fromDisk, err := c1.get(key, compile)
	if err != nil || !bytes.Equal(got, want) || fromDisk {
		t.Fatalf("first get = %q, fromDisk %v, %v", got, fromDisk, err)
	}
	if _, _, err := c1.get(key, compile); err != nil || c1.compiles.Load() != 1 {
		t.Fatalf("second get in one cache compiled %d times (err %v); want 1", c1.compiles.Load(), err)
	}

	c2 := newCubinCache(dir) // a new process, as far as the cache knows
	got, fromDisk, err = c2.get(key, func() ([]byte, error) { return nil, errors.New("compiled again") })
	if err != nil || !bytes.Equal(got, want) || !fromDisk || c2.compiles.Load() != 0 {
		t.Fatalf("get from disk = %q, fromDisk %v, compiles %d, %v", got, fromDisk, c2.compiles.Load(), err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != hex.EncodeToString(key[:])+".cubin" {
		t.Errorf("cache dir holds %v; want exactly the one cubin, no temp files", names(entries))
	}

	c2.evict(key)
	if _, err := os.Stat(c2.path(key)); !os.IsNotExist(err) {
		t.Errorf("evicted cubin still on disk: %v", err)
	}
}

func TestCubinCacheCompileError(t *testing.T) {
	c := newCubinCache(t.TempDir())
	key := cacheKey("bad", nil, "sm_90")
	boom := errors.New("syntax error")
	if _, _, err := c.get(key, func() ([]byte, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("get = %v; want the compile error", err)
	}
	if _, err := os.Stat(c.path(key)); !os.IsNotExist(err) {
		t.Error("a failed compile left a file in the cache")
	}
}

func TestCubinCacheNoDir(t *testing.T) {
	c := newCubinCache("")
	key := cacheKey("k", nil, "sm_90")
	for range 2 {
		if _, _, err := c.get(key, func() ([]byte, error) { return []byte{1}, nil }); err != nil {
			t.Fatal(err)
		}
	}
	if c.compiles.Load() != 1 {
		t.Errorf("memory-only cache compiled %d times; want 1", c.compiles.Load())
	}
}

func TestDefaultCacheDir(t *testing.T) {
	t.Setenv(CacheDirEnv, "off")
	if d := defaultCacheDir(); d != "" {
		t.Errorf("with %s=off, dir = %q; want none", CacheDirEnv, d)
	}
	t.Setenv(CacheDirEnv, "/tmp/x")
	if d := defaultCacheDir(); d != "/tmp/x" {
		t.Errorf("with %s=/tmp/x, dir = %q", CacheDirEnv, d)
	}
	t.Setenv(CacheDirEnv, "")
	t.Setenv("XDG_CACHE_HOME", "/tmp/xdg")
	if d := defaultCacheDir(); d != filepath.Join("/tmp/xdg", "kvharness", "cubin") {
		t.Errorf("default dir = %q; want under XDG_CACHE_HOME", d)
	}
}

func TestWithDefaults(t *testing.T) {
	got := withDefaults([]string{"-lineinfo"}, "sm_90", "")
	if !slices.Equal(got, []string{"-lineinfo", "--gpu-architecture=sm_90"}) {
		t.Errorf("withDefaults = %v", got)
	}
	mine := []string{"--gpu-architecture=sm_90a", "-I/mine"}
	got = withDefaults(mine, "sm_90", "/usr/local/cuda/include")
	if !slices.Equal(got, []string{"--gpu-architecture=sm_90a", "-I/mine", "--include-path=/usr/local/cuda/include"}) {
		t.Errorf("withDefaults kept %v; want the caller's architecture and include path first", got)
	}
}

func TestToolkitInclude(t *testing.T) {
	home := t.TempDir()
	inc := filepath.Join(home, "include")
	if err := os.Mkdir(inc, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CUDA_HOME", "/nonexistent-cuda")
	t.Setenv("CUDA_PATH", home)
	cands := includeCandidates()
	if len(cands) != 3 || cands[1] != inc {
		t.Fatalf("includeCandidates = %v; want $CUDA_HOME/include, $CUDA_PATH/include, the default", cands)
	}
	if got := toolkitInclude(cands); got != inc {
		t.Errorf("toolkitInclude = %q; want the first existing candidate %q", got, inc)
	}
	if got := toolkitInclude([]string{"/nonexistent-cuda/include"}); got != "" {
		t.Errorf("toolkitInclude of missing dirs = %q; want none", got)
	}
}

func names(es []os.DirEntry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

// Concurrent gets of one key, as an attach's pools of one layout make
// them, compile it once and all get its cubin.
func TestCubinCacheOneCompilePerKey(t *testing.T) {
	c := newCubinCache(t.TempDir())
	key := cacheKey("kernel", []string{"-DRULE=1"}, "sm_90")
	want := []byte("cubin bytes")
	compile := func() ([]byte, error) {
		time.Sleep(200 * time.Millisecond) // NVRTC's time: every get starts while it runs
		return want, nil
	}
	const gets = 8
	var wg sync.WaitGroup
	got := make([][]byte, gets)
	errs := make([]error, gets)
	for i := range gets {
		wg.Go(func() { got[i], _, errs[i] = c.get(key, compile) })
	}
	wg.Wait()
	for i := range gets {
		if errs[i] != nil || !bytes.Equal(got[i], want) {
			t.Errorf("get %d = %q, %v; want the cubin", i, got[i], errs[i])
		}
	}
	if n := c.compiles.Load(); n != 1 {
		t.Errorf("%d concurrent gets of one key compiled it %d times; want once", gets, n)
	}
}
