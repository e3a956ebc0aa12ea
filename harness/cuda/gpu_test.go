package cuda

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

func TestDeviceInfo(t *testing.T) {
	d := openDevice(t)
	major, minor := d.ComputeCapability()
	v, err := DriverVersion()
	must(t, err)
	t.Logf("device %d: %s, sm_%d%d, %d SMs, %d MiB, driver CUDA %d", d.Ordinal(), d.Name(), major, minor,
		d.Multiprocessors(), d.TotalMem()>>20, v)
	if d.Name() == "" || major < 3 || d.TotalMem() <= 0 || d.Multiprocessors() <= 0 {
		t.Errorf("implausible properties: %q sm_%d%d mem %d SMs %d", d.Name(), major, minor, d.TotalMem(), d.Multiprocessors())
	}
}

func TestAllocCopyRoundTrip(t *testing.T) {
	d := openDevice(t)
	const n = 1<<20 + 13 // not a multiple of anything convenient
	src := make([]byte, n)
	rand.NewChaCha8([32]byte{1}).Read(src)
	a, b := alloc(t, d, n), alloc(t, d, n)

	must(t, d.HtoD(a, src))
	must(t, d.DtoD(b, a, n))
	got := make([]byte, n)
	must(t, d.DtoH(got, b))
	if !bytes.Equal(got, src) {
		t.Fatal("HtoD → DtoD → DtoH changed the data")
	}

	must(t, d.Memset8(b.Add(100), 0xab, 50))
	must(t, d.DtoH(got[:200], b))
	for i := range 200 {
		want := src[i]
		if i >= 100 && i < 150 {
			want = 0xab
		}
		if got[i] != want {
			t.Fatalf("after Memset8, byte %d = %#x; want %#x", i, got[i], want)
		}
	}
}

// TestConcurrentUse: many goroutines share one Device; their calls are
// serialised on its thread and each sees its own data.
func TestConcurrentUse(t *testing.T) {
	d := openDevice(t)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			src := bytes.Repeat([]byte{byte(g + 1)}, 4096+g)
			p, err := d.Alloc(len(src))
			if err != nil {
				errs <- err
				return
			}
			defer d.Free(p)
			got := make([]byte, len(src))
			for range 20 {
				if err := d.HtoD(p, src); err != nil {
					errs <- err
					return
				}
				if err := d.DtoH(got, p); err != nil {
					errs <- err
					return
				}
				if !bytes.Equal(got, src) {
					errs <- fmt.Errorf("goroutine %d read back another goroutine's data", g)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestAsyncCopies(t *testing.T) {
	d := openDevice(t)
	s := newHandle(t, d.NewStream)
	src := []byte("stream-ordered copies keep their order")
	a, b := alloc(t, d, 64), alloc(t, d, 64)
	must(t, s.Memset8Async(a, 0, 64))
	must(t, s.HtoDAsync(a, src))
	must(t, s.DtoDAsync(b, a, len(src)))
	got := make([]byte, len(src))
	must(t, s.DtoHAsync(got, b))
	must(t, s.Sync())
	if !bytes.Equal(got, src) {
		t.Fatalf("async round trip gave %q", got)
	}
}

const patternSrc = `
extern "C" __global__ void pattern(unsigned long long* out, int n, unsigned int mul, long long add, float f) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) out[i] = (unsigned long long)i * mul + add + (long long)f;
}
`

func patternWant(i int) uint64 { return uint64(i)*3 + uint64(1<<40) + 2 }

func TestCompileLaunch(t *testing.T) {
	d := openDevice(t)
	start := time.Now()
	m, err := d.Compile("pattern", patternSrc, "-DKVHARNESS_TEST=1", "-lineinfo")
	must(t, err)
	t.Logf("NVRTC compile + load of a small kernel for %s: %v", d.Arch(), time.Since(start))
	f, err := m.Function("pattern")
	must(t, err)
	const n = 1000
	out := alloc(t, d, n*8)
	must(t, f.Launch(nil, Dim3{X: (n + 127) / 128}, Dim3{X: 128}, 0, out, int32(n), uint32(3), int64(1<<40), float32(2.75)))
	must(t, d.Sync())
	got := make([]byte, n*8)
	must(t, d.DtoH(got, out))
	for i := range n {
		if v := binary.LittleEndian.Uint64(got[i*8:]); v != patternWant(i) {
			t.Fatalf("out[%d] = %d; want %d", i, v, patternWant(i))
		}
	}
	if _, err := m.Function("missing"); err == nil {
		t.Error("Function(missing) succeeded")
	}
}

func TestCompileError(t *testing.T) {
	d := openDevice(t)
	_, err := d.Compile("broken", `extern "C" __global__ void k() { this is not cuda; }`)
	var ce *CompileError
	if !errors.As(err, &ce) || ce.Log == "" {
		t.Fatalf("Compile of bad source = %v; want a *CompileError with a log", err)
	}
	t.Logf("compile error as reported:\n%v", err)
}

func TestFP8Header(t *testing.T) {
	d := openDevice(t)
	src := `#include <cuda_fp8.h>
extern "C" __global__ void q(unsigned char* out, float v) { out[0] = __nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3); }`
	m, err := d.Compile("fp8", src)
	must(t, err)
	f, err := m.Function("q")
	must(t, err)
	out := alloc(t, d, 1)
	must(t, f.Launch(nil, Dim3{X: 1}, Dim3{X: 1}, 0, out, float32(1.0)))
	got := make([]byte, 1)
	must(t, d.DtoH(got, out))
	if got[0] != 0x38 { // 1.0 in e4m3: sign 0, exponent 7 (bias 7), mantissa 0
		t.Errorf("fp8 e4m3 of 1.0 = %#x; want 0x38", got[0])
	}
}

func TestEventTiming(t *testing.T) {
	d := openDevice(t)
	const n = 256 << 20
	p := alloc(t, d, n)
	start, end := newHandle(t, d.NewEvent), newHandle(t, d.NewEvent)
	s := newHandle(t, d.NewStream)
	must(t, start.Record(s))
	must(t, s.Memset8Async(p, 1, n))
	must(t, end.Record(s))
	el, err := Elapsed(start, end)
	must(t, err)
	t.Logf("memset of 256 MiB: %v (%.0f GB/s)", el, float64(n)/el.Seconds()/1e9)
	if el <= 0 || el > 10*time.Second {
		t.Errorf("Elapsed = %v; want a small positive duration", el)
	}
}

// TestReached: an event behind a 50 ms spin is not reached right after
// queueing, and is once the stream is done.
func TestReached(t *testing.T) {
	d := openDevice(t)
	m, err := d.Compile("spin", `extern "C" __global__ void spin(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < ns);
}`)
	must(t, err)
	f, err := m.Function("spin")
	must(t, err)
	e, s := newHandle(t, d.NewEvent), newHandle(t, d.NewStream)
	var before, after bool
	must(t, d.Do(func(c *Ctx) error {
		if err := c.Launch(f, s, Dim3{X: 1}, Dim3{X: 1}, 0, uint64(50*time.Millisecond)); err != nil {
			return err
		}
		if err := c.Record(e, s); err != nil {
			return err
		}
		if before, err = c.Reached(e); err != nil {
			return err
		}
		if err := c.StreamSync(s); err != nil {
			return err
		}
		after, err = c.Reached(e)
		return err
	}))
	if before || !after {
		t.Errorf("Reached: %v while the spin runs, %v after; want false, true", before, after)
	}
}

// TestCompileDiskCache: a second Compile of the same source, by a cache with
// an empty memory (as in a new process), loads the cubin from disk without
// running NVRTC, and the module works.
func TestCompileDiskCache(t *testing.T) {
	d := openDevice(t)
	src := patternSrc + fmt.Sprintf("// %s %d\n", t.Name(), time.Now().UnixNano())
	c := processCache()
	before := c.compiles.Load()
	_, err := d.Compile("pattern", src)
	must(t, err)
	if got := c.compiles.Load() - before; got != 1 {
		t.Fatalf("first Compile ran NVRTC %d times; want 1", got)
	}

	fresh := newCubinCache(c.dir)
	cubins = fresh
	defer func() { cubins = c }()
	start := time.Now()
	m, err := d.Compile("pattern", src)
	must(t, err)
	if fresh.compiles.Load() != 0 {
		t.Fatalf("Compile with a warm disk cache ran NVRTC %d times; want 0", fresh.compiles.Load())
	}
	t.Logf("Compile from the disk cache: %v", time.Since(start))
	f, err := m.Function("pattern")
	must(t, err)
	out := alloc(t, d, 8)
	must(t, f.Launch(nil, Dim3{X: 1}, Dim3{X: 1}, 0, out, int32(1), uint32(3), int64(1<<40), float32(2)))
	got := make([]byte, 8)
	must(t, d.DtoH(got, out))
	if v := binary.LittleEndian.Uint64(got); v != patternWant(0) {
		t.Errorf("kernel from cached cubin wrote %d; want %d", v, patternWant(0))
	}
}

// TestThread: a Device from Thread is on the same primary context (memory
// allocated through d is written through it and read back through d), its
// calls take its own thread (d's trip count stays still), and closing it
// leaves d working.
func TestThread(t *testing.T) {
	d := openDevice(t)
	th, err := d.Thread()
	must(t, err)
	src := make([]byte, 4096)
	rand.NewChaCha8([32]byte{7}).Read(src)
	p := alloc(t, d, len(src))
	before := d.Trips()
	must(t, th.HtoD(p, src))
	if n := d.Trips() - before; n != 0 {
		t.Errorf("a copy through Thread's device took %d trips to the first device's thread; want 0", n)
	}
	must(t, th.Close())
	got := make([]byte, len(src))
	must(t, d.DtoH(got, p))
	if !bytes.Equal(got, src) {
		t.Fatal("bytes written through Thread's device read back different through d")
	}
	if _, err := (*Device)(nil).Thread(); err == nil {
		t.Error("Thread of a nil Device succeeded")
	}
}
