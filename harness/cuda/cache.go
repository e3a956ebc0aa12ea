package cuda

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/singleflight"
)

// CacheDirEnv overrides where compiled cubins are kept on disk; by default
// they go under os.UserCacheDir()/kvharness/cubin. Set it to "off" to keep
// them in memory only.
const CacheDirEnv = "KVHARNESS_CUBIN_CACHE"

// cacheKey identifies a cubin: SHA-256 over the architecture, the options
// and the source, each length-prefixed so that no two different inputs can
// run together into the same byte stream.
func cacheKey(src string, opts []string, arch string) [32]byte {
	h := sha256.New()
	field := func(s string) {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	field("kvharness-cubin-v1")
	field(arch)
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(opts)))
	h.Write(n[:])
	for _, o := range opts {
		field(o)
	}
	field(src)
	var key [32]byte
	h.Sum(key[:0])
	return key
}

// cubinCache keeps compiled cubins in memory and, when dir is set, on disk,
// so that a second Compile in this process, or in the next one, skips NVRTC.
type cubinCache struct {
	dir      string
	mu       sync.Mutex
	mem      map[[32]byte][]byte
	compiles atomic.Int64 // NVRTC runs; tests use it to see cache hits
	// flight makes concurrent gets of one key read or compile it once:
	// an attach names the same kernel for every pool of a layout (a store
	// target's case, repeat and unpadded pools, for each set it checks
	// ahead on), and a plugin compiling its pools at once would otherwise
	// run NVRTC on the same program once per pool, side by side.
	flight singleflight.Group
}

func newCubinCache(dir string) *cubinCache {
	return &cubinCache{dir: dir, mem: make(map[[32]byte][]byte)}
}

// defaultCacheDir is where cubins go unless CacheDirEnv says otherwise; ""
// (no disk cache) when there is no user cache directory.
func defaultCacheDir() string {
	switch env := os.Getenv(CacheDirEnv); env {
	case "off":
		return ""
	case "":
	default:
		return env
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(base, "kvharness", "cubin")
}

var (
	cubinsOnce sync.Once
	cubins     *cubinCache
)

// processCache is the cache Device.Compile uses.
func processCache() *cubinCache {
	cubinsOnce.Do(func() { cubins = newCubinCache(defaultCacheDir()) })
	return cubins
}

// get returns the cubin for key from memory, then disk, then compile.
// fromDisk is true when the bytes were read from disk, so a caller whose
// module load fails can evict and recompile.
func (c *cubinCache) get(key [32]byte, compile func() ([]byte, error)) (cubin []byte, fromDisk bool, err error) {
	if cubin = c.inMemory(key); cubin != nil {
		return cubin, false, nil
	}
	type found struct {
		cubin    []byte
		fromDisk bool
	}
	v, err, _ := c.flight.Do(string(key[:]), func() (any, error) {
		if cubin := c.inMemory(key); cubin != nil { // kept by a get that ended as this one began
			return found{cubin, false}, nil
		}
		if cubin := c.read(key); cubin != nil {
			c.remember(key, cubin)
			return found{cubin, true}, nil
		}
		c.compiles.Add(1)
		cubin, err := compile()
		if err != nil {
			return nil, err
		}
		c.remember(key, cubin)
		c.write(key, cubin)
		return found{cubin, false}, nil
	})
	if err != nil {
		return nil, false, err
	}
	f := v.(found)
	return f.cubin, f.fromDisk, nil
}

func (c *cubinCache) inMemory(key [32]byte) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mem[key]
}

func (c *cubinCache) remember(key [32]byte, cubin []byte) {
	c.mu.Lock()
	c.mem[key] = cubin
	c.mu.Unlock()
}

// evict forgets key everywhere, for a cached cubin the driver rejected.
func (c *cubinCache) evict(key [32]byte) {
	c.mu.Lock()
	delete(c.mem, key)
	c.mu.Unlock()
	if c.dir != "" {
		os.Remove(c.path(key))
	}
}

func (c *cubinCache) path(key [32]byte) string {
	return filepath.Join(c.dir, hex.EncodeToString(key[:])+".cubin")
}

func (c *cubinCache) read(key [32]byte) []byte {
	if c.dir == "" {
		return nil
	}
	b, err := os.ReadFile(c.path(key))
	if err != nil || len(b) == 0 {
		return nil
	}
	return b
}

// write stores the cubin atomically (temp file, then rename) so that a
// concurrent reader sees a whole cubin or none. Failures are ignored: the
// disk cache only saves time, and a read-only home must not break compiles.
func (c *cubinCache) write(key [32]byte, cubin []byte) {
	if c.dir == "" || os.MkdirAll(c.dir, 0o755) != nil {
		return
	}
	f, err := os.CreateTemp(c.dir, "tmp-*.cubin")
	if err != nil {
		return
	}
	_, werr := f.Write(cubin)
	cerr := f.Close()
	if werr != nil || cerr != nil || os.Rename(f.Name(), c.path(key)) != nil {
		os.Remove(f.Name())
	}
}
