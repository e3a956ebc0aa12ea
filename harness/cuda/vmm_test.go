package cuda

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Environment of the shared-memory child: what to do and the arena's size
// (its file descriptor is inherited as fd 3), or the IPC handle.
const (
	envSharedMode = "KVHARNESS_TEST_SHARED_MODE"
	envSharedSize = "KVHARNESS_TEST_SHARED_SIZE"
)

// runSharedChild runs TestSharedChild with the environment and, when
// shared is set, its file descriptor as fd 3, and returns its output.
func runSharedChild(t *testing.T, shared *Shared, env ...string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestSharedChild$", "-test.v")
	cmd.Env = append(os.Environ(), env...)
	if shared != nil {
		fd, err := shared.ExportFD()
		must(t, err)
		f := os.NewFile(uintptr(fd), "shared-arena")
		defer f.Close()
		cmd.ExtraFiles = []*os.File{f}
	}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestSharedChild") {
		t.Fatalf("shared-memory child failed: %v\n%s", err, out)
	}
	return string(out)
}

// TestShared exports shareable memory by file descriptor to a child
// process, which maps it and writes a pattern the parent must see.
func TestShared(t *testing.T) {
	d := openDevice(t)
	const n = 3 << 20 // rounds up to the granularity
	s, err := d.AllocShared(n)
	must(t, err)
	t.Cleanup(func() { must(t, s.Free()) })
	if s.Size() < n || s.Ptr() == 0 {
		t.Fatalf("AllocShared(%d): size %d at %#x", n, s.Size(), s.Ptr())
	}
	if s.Ptr()%(2<<20) != 0 {
		t.Errorf("AllocShared mapped at %#x; want a 2 MiB aligned address", s.Ptr())
	}
	must(t, d.Memset8(s.Ptr(), 0, s.Size()))
	runSharedChild(t, s, envSharedMode+"=write", envSharedSize+"="+strconv.Itoa(s.Size()))
	got := make([]byte, n)
	must(t, d.DtoH(got, s.Ptr()))
	if !bytes.Equal(got, ipcPattern(n)) {
		t.Fatal("the parent does not see the child's write through the shared mapping")
	}
	if _, err := d.ImportShared(-1, s.Size()); err == nil {
		t.Error("ImportShared of fd -1 succeeded")
	}
}

// TestSharedChild is the child of TestShared and TestMappings; on its own
// it skips.
func TestSharedChild(t *testing.T) {
	mode := os.Getenv(envSharedMode)
	if mode == "" {
		t.Skip("runs only as the child process of TestShared and TestMappings")
	}
	d := openDevice(t)
	size, err := strconv.Atoi(os.Getenv(envSharedSize))
	must(t, err)
	var p Ptr
	if h := os.Getenv(envIPCHandle); h != "" {
		raw, err := hex.DecodeString(h)
		if err != nil || len(raw) != 64 {
			t.Fatalf("bad handle %q: %v", h, err)
		}
		p, err = d.IpcOpen([64]byte(raw))
		must(t, err)
		defer d.IpcClose(p)
	} else {
		s, err := d.ImportShared(3, size)
		must(t, err)
		defer s.Free()
		p = s.Ptr()
	}
	switch mode {
	case "write":
		must(t, d.HtoD(p, ipcPattern(3<<20)))
		must(t, d.Sync())
	case "scatter":
		fmt.Printf("scatter-us %.2f\n", scatterMicros(t, d, p))
	}
}

// Scatter's shape: 262,144 rows of 256 B to random distinct slots of a
// 1 Mi-slot pool, as a bf16 store at the largest token count.
const (
	scatterRows  = 262144
	scatterSlots = 1 << 20
	scatterPool  = scatterSlots * 256
)

const scatterSource = `extern "C" __global__ void scatter(uint4* pool, const uint4* rows, const long long* loc, int n) {
  long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  long long r = t >> 4;
  if (r >= n) return;
  pool[loc[r] * 16 + (t & 15)] = rows[r * 16 + (t & 15)];
}`

// scatterMicros times the scatter into pool: the median over 15 batches of
// 10 launches between two events.
func scatterMicros(t *testing.T, d *Device, pool Ptr) float64 {
	m, err := d.Compile("scatter", scatterSource)
	must(t, err)
	f, err := m.Function("scatter")
	must(t, err)
	rows := alloc(t, d, scatterRows*256)
	loc := alloc(t, d, scatterRows*8)
	perm := rand.New(rand.NewPCG(1, 2)).Perm(scatterSlots)[:scatterRows]
	b := make([]byte, 0, 8*scatterRows)
	for _, s := range perm {
		b = binary.LittleEndian.AppendUint64(b, uint64(s))
	}
	must(t, d.HtoD(loc, b))
	must(t, d.Memset8(rows, 0x5a, scatterRows*256))
	s, err := d.NewStream()
	must(t, err)
	defer s.Destroy()
	e0, err := d.NewEvent()
	must(t, err)
	e1, err := d.NewEvent()
	must(t, err)
	var us []float64
	grid, block := Dim3{X: scatterRows * 16 / 256}, Dim3{X: 256}
	must(t, d.Do(func(c *Ctx) error {
		for i := range 16 {
			if err := c.Record(e0, s); err != nil {
				return err
			}
			for range 10 {
				if err := c.Launch(f, s, grid, block, 0, pool, rows, loc, int32(scatterRows)); err != nil {
					return err
				}
			}
			if err := c.Record(e1, s); err != nil {
				return err
			}
			el, err := c.Elapsed(e0, e1)
			if err != nil {
				return err
			}
			if i > 0 { // the first batch warms up
				us = append(us, float64(el)/float64(time.Microsecond)/10)
			}
		}
		return nil
	}))
	slices.Sort(us)
	return us[len(us)/2]
}

// TestMappings measures the scatter on the four ways a pool can be mapped:
// this process's own Alloc and AllocShared, and a child's IPC mapping of
// the first and import of the second. It asserts nothing about speed; set
// KVHARNESS_GPU_PROBES=1 to run it.
func TestMappings(t *testing.T) {
	if os.Getenv("KVHARNESS_GPU_PROBES") == "" {
		t.Skip("a measurement: set KVHARNESS_GPU_PROBES=1 on a GPU machine")
	}
	d := openDevice(t)
	plain := alloc(t, d, scatterPool)
	shared, err := d.AllocShared(scatterPool)
	must(t, err)
	defer shared.Free()
	h, err := d.IpcHandle(plain)
	must(t, err)
	size := envSharedSize + "=" + strconv.Itoa(shared.Size())
	for round := range 2 {
		child := func(out string) string {
			i := strings.Index(out, "scatter-us ")
			if i < 0 {
				t.Fatalf("no figure from the child:\n%s", out)
			}
			return strings.Fields(out[i:])[1]
		}
		t.Logf("round %d: Alloc %.2f µs, AllocShared %.2f µs, child IPC %s µs, child import %s µs", round,
			scatterMicros(t, d, plain), scatterMicros(t, d, shared.Ptr()),
			child(runSharedChild(t, nil, envSharedMode+"=scatter", size, envIPCHandle+"="+hex.EncodeToString(h[:]))),
			child(runSharedChild(t, shared, envSharedMode+"=scatter", size)))
	}
}
