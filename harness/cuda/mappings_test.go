package cuda

import (
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

// Scatter's shape: 262,144 rows of 256 B to random distinct slots of a
// 1 Mi-slot pool, as a bf16 store at the benchmarks' largest token count.
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

// scatterLayout places the scatter in an allocation: the pool, the rows
// and the slots at these offsets; rows < 0 keeps rows and slots in memory
// of the process's own.
type scatterLayout struct{ pool, rows, loc int }

// envScatter carries the IPC handle and the layout to the child.
const envScatter = "KVHARNESS_TEST_SCATTER"

// scatterMicros times the scatter into the allocation at base laid out as
// l: the median over 15 batches of 10 launches between two events.
func scatterMicros(t *testing.T, d *Device, base Ptr, l scatterLayout) float64 {
	m, err := d.Compile("scatter", scatterSource)
	must(t, err)
	f, err := m.Function("scatter")
	must(t, err)
	pool, rows, loc := base.Add(l.pool), base.Add(l.rows), base.Add(l.loc)
	if l.rows < 0 {
		rows, loc = alloc(t, d, scatterRows*256), alloc(t, d, scatterRows*8)
	}
	b := make([]byte, 0, 8*scatterRows)
	for _, s := range rand.New(rand.NewPCG(1, 2)).Perm(scatterSlots)[:scatterRows] {
		b = binary.LittleEndian.AppendUint64(b, uint64(s))
	}
	must(t, d.HtoD(loc, b))
	must(t, d.Memset8(rows, 0x5a, scatterRows*256))
	s, e0, e1 := newHandle(t, d.NewStream), newHandle(t, d.NewEvent), newHandle(t, d.NewEvent)
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

// TestMappings times a plain 256-byte-row scatter on this process's own
// allocation and through a child's mapping of it, twice (each child maps
// anew): as an IPC mapping of a cuMemAlloc allocation, and as an import of
// VMM memory (AllocShared, by file descriptor). The pool is first alone in
// its allocation, then laid out as a bench arena (the pool after a guard,
// the inputs in the allocation). It asserts nothing about speed; set
// KVHARNESS_GPU_PROBES=1 to run it.
func TestMappings(t *testing.T) {
	if os.Getenv("KVHARNESS_GPU_PROBES") == "" {
		t.Skip("a measurement: set KVHARNESS_GPU_PROBES=1 on a GPU machine")
	}
	d := openDevice(t)
	for _, c := range []struct {
		name string
		size int
		l    scatterLayout
	}{
		{"pool alone", scatterPool, scatterLayout{0, -1, -1}},
		{"arena", 512 << 20, scatterLayout{4096, 320 << 20, 400 << 20}},
	} {
		p := alloc(t, d, c.size)
		h, err := d.IpcHandle(p)
		must(t, err)
		layout := fmt.Sprintf("%d %d %d", c.l.pool, c.l.rows, c.l.loc)
		env := fmt.Sprintf("%s=%s %s", envScatter, hex.EncodeToString(h[:]), layout)
		t.Logf("%s: own allocation %.2f µs, child IPC mappings %s and %s µs", c.name,
			scatterMicros(t, d, p, c.l), scatterChild(t, nil, env), scatterChild(t, nil, env))
		s, err := d.AllocShared(c.size)
		must(t, err)
		env = fmt.Sprintf("%s=fd:%d %s", envScatter, s.Size(), layout)
		t.Logf("%s: own VMM allocation %.2f µs, child VMM imports %s and %s µs", c.name,
			scatterMicros(t, d, s.Ptr(), c.l), scatterChild(t, s, env), scatterChild(t, s, env))
		must(t, s.Free())
	}
}

// scatterChild runs TestScatterChild, with s's file descriptor as fd 3
// when s is set, and returns the figure it printed.
func scatterChild(t *testing.T, s *Shared, env string) string {
	cmd := exec.Command(os.Args[0], "-test.run=^TestScatterChild$", "-test.v")
	if s != nil {
		var f *os.File
		cmd, f = sharedChild(t, s, "TestScatterChild")
		defer f.Close()
	}
	cmd.Env = append(os.Environ(), env)
	out, err := cmd.CombinedOutput()
	i := strings.Index(string(out), "scatter-us ")
	if err != nil || i < 0 {
		t.Fatalf("scatter child failed: %v\n%s", err, out)
	}
	return strings.Fields(string(out[i:]))[1]
}

// TestScatterChild is the child of TestMappings; on its own it skips. It
// maps the parent's memory from an IPC handle, or from fd 3 when the
// handle reads fd:SIZE.
func TestScatterChild(t *testing.T) {
	v := os.Getenv(envScatter)
	if v == "" {
		t.Skip("runs only as the child process of TestMappings")
	}
	var hs string
	var l scatterLayout
	if _, err := fmt.Sscanf(v, "%s %d %d %d", &hs, &l.pool, &l.rows, &l.loc); err != nil {
		t.Fatalf("bad %s %q: %v", envScatter, v, err)
	}
	d := openDevice(t)
	var p Ptr
	if size, ok := strings.CutPrefix(hs, "fd:"); ok {
		n, err := strconv.Atoi(size)
		must(t, err)
		s, err := d.ImportShared(3, n)
		must(t, err)
		defer s.Free()
		p = s.Ptr()
	} else {
		p = openHandle(t, d, hs)
		defer d.IpcClose(p)
	}
	fmt.Printf("scatter-us %.2f\n", scatterMicros(t, d, p, l))
}
