package cuda

import (
	"encoding/binary"
	"testing"
)

const affineSrc = `
extern "C" __global__ void affine(const int* in, int* out, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) out[i] = in[i] * 2 + 1;
}
`

func putInts(vs []int32) []byte {
	b := make([]byte, 4*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(v))
	}
	return b
}

func getInts(b []byte) []int32 {
	vs := make([]int32, len(b)/4)
	for i := range vs {
		vs[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return vs
}

// TestGraphReplay captures a kernel that reads a fixed device buffer, then
// rewrites the buffer and replays: the replay must compute from the new
// contents, and capturing must not have run the kernel.
func TestGraphReplay(t *testing.T) {
	d := openDevice(t)
	m, err := d.Compile("affine", affineSrc)
	must(t, err)
	f, err := m.Function("affine")
	must(t, err)
	const n = 64
	in, out := alloc(t, d, 4*n), alloc(t, d, 4*n)
	first := make([]int32, n)
	for i := range first {
		first[i] = int32(i)
	}
	must(t, d.HtoD(in, putInts(first)))
	must(t, d.Memset8(out, 0, 4*n))

	s := newHandle(t, d.NewStream)
	if err := (*Stream)(nil).BeginCapture(); err == nil {
		t.Error("capturing the legacy stream succeeded")
	}
	must(t, s.BeginCapture())
	must(t, f.Launch(s, Dim3{X: 1}, Dim3{X: n}, 0, in, out, int32(n)))
	g := newHandle(t, s.EndCapture)
	x := newHandle(t, g.Instantiate)

	got := make([]byte, 4*n)
	must(t, d.DtoH(got, out))
	if vs := getInts(got); vs[5] != 0 {
		t.Fatalf("capture ran the kernel: out[5] = %d", vs[5])
	}

	second := make([]int32, n)
	for i := range second {
		second[i] = int32(1000 - 7*i)
	}
	must(t, d.HtoD(in, putInts(second)))
	must(t, x.Launch(s))
	must(t, s.Sync())
	must(t, d.DtoH(got, out))
	for i, v := range getInts(got) {
		if want := second[i]*2 + 1; v != want {
			t.Fatalf("replay out[%d] = %d; want %d (from the rewritten input)", i, v, want)
		}
	}
}
