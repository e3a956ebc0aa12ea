package cudaarena

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/kvharness/kvharness/harness/cuda"
	"github.com/kvharness/kvharness/harness/pool"
)

func TestDiffAdd(t *testing.T) {
	want := []byte{0, 0, 0, 0, 0, 0, 0, 0}
	d := diff{keep: true}
	d.add([]byte{0, 1, 2, 0, 0, 0, 0, 9}, want, 100)
	if exp := []pool.Window{{Off: 101, Len: 2}, {Off: 107, Len: 1}}; !reflect.DeepEqual(d.ranges, exp) {
		t.Fatalf("ranges = %v; want %v", d.ranges, exp)
	}
	// The next block starts where the last change ended: one range.
	d.add([]byte{5, 0}, []byte{0, 0}, 108)
	if exp := []pool.Window{{Off: 101, Len: 2}, {Off: 107, Len: 2}}; !reflect.DeepEqual(d.ranges, exp) {
		t.Fatalf("ranges across blocks = %v; want %v", d.ranges, exp)
	}
	if exp := []byte{1, 2, 9, 5}; !bytes.Equal(d.bytes, exp) {
		t.Fatalf("kept bytes = %v; want %v", d.bytes, exp)
	}
	plain := diff{}
	plain.add([]byte{7, 0}, []byte{0, 0}, 0)
	plain.add(want, want, 8)
	if plain.bytes != nil || len(plain.ranges) != 1 {
		t.Fatalf("diff without keep: ranges %v, bytes %v; want one range and no bytes", plain.ranges, plain.bytes)
	}
}

// TestNewWithoutDevice: New fails cleanly, with ErrNoDriver where there is
// no driver, rather than panicking.
func TestNewWithoutDevice(t *testing.T) {
	_, err := New(nil, 1<<20, IPC, t.TempDir())
	if err == nil {
		t.Fatal("New(nil device) succeeded")
	}
	if cuda.Available() != nil && !errors.Is(err, cuda.ErrNoDriver) {
		t.Fatalf("New without a driver = %v; want an error wrapping cuda.ErrNoDriver", err)
	}
}

func TestDiffAddMasked(t *testing.T) {
	got := make([]byte, 256)
	for i := range got {
		got[i] = byte(i)
	}
	d := diff{keep: true}
	// bytes 1-2, 63-64 (across mask words), 255; then byte 0 of the next block.
	d.addMasked(got, [4]uint64{1<<1 | 1<<2 | 1<<63, 1, 0, 1 << 63}, 512)
	d.addMasked(got, [4]uint64{1, 0, 0, 0}, 768)
	d.addMasked(got, [4]uint64{^uint64(0), 0, 0, 0}, 1024)
	want := []pool.Window{{Off: 513, Len: 2}, {Off: 575, Len: 2}, {Off: 767, Len: 2}, {Off: 1024, Len: 64}}
	if !reflect.DeepEqual(d.ranges, want) {
		t.Fatalf("ranges = %v; want %v", d.ranges, want)
	}
	wantBytes := append([]byte{1, 2, 63, 64, 255, 0}, got[:64]...)
	if !bytes.Equal(d.bytes, wantBytes) {
		t.Fatalf("bytes = %v; want %v", d.bytes, wantBytes)
	}
	// Whole blocks, back to back: one range, every byte.
	all := [4]uint64{^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)}
	whole := diff{keep: true}
	whole.addMasked(got, all, 256)
	whole.addMasked(got, all, 512)
	whole.addMasked(got, [4]uint64{1, 0, 0, 0}, 768)
	if want := []pool.Window{{Off: 256, Len: 513}}; !reflect.DeepEqual(whole.ranges, want) {
		t.Fatalf("whole blocks: ranges = %v; want %v", whole.ranges, want)
	}
	if want := append(append(append([]byte{}, got...), got...), got[0]); !bytes.Equal(whole.bytes, want) {
		t.Fatal("whole blocks: the bytes are not the blocks' own")
	}
}

func TestMergeEntries(t *testing.T) {
	packed := make([]byte, 3*entryBytes)
	put := func(i, block int, data byte, mask [4]uint64) {
		e := packed[i*entryBytes:]
		for k := range blockBytes {
			e[k] = data
		}
		for q, m := range mask {
			binary.LittleEndian.PutUint64(e[blockBytes+8*q:], m)
		}
		binary.LittleEndian.PutUint32(e[blockBytes+32:], uint32(block))
	}
	put(0, 9, 7, [4]uint64{0, 1, 0, 0})
	put(1, 4, 5, [4]uint64{1, 0, 0, 0})
	put(2, 9, 7, [4]uint64{2, 0, 0, 8})
	es := mergeEntries(packed)
	if len(es) != 2 || es[0].block != 4 || es[1].block != 9 {
		t.Fatalf("entries for blocks %v; want 4 then 9, once each", es)
	}
	if es[1].mask != [4]uint64{2, 1, 0, 8} || es[1].data[0] != 7 || es[0].data[255] != 5 {
		t.Fatalf("block 9 mask %v, data %d; want the two masks joined and its bytes", es[1].mask, es[1].data[0])
	}
}

// BenchmarkDecodeFlight is the host's part of a flight's capture scan: the
// changed blocks of four cases of three runs of 256 rows of two 256-byte
// planes each (6,144 entries, in the order the scan's atomics left them)
// merged and turned into ranges and bytes (decodeEntries). It runs after
// the scan's trip to the device thread, not inside it (ChangedIn).
func BenchmarkDecodeFlight(b *testing.B) {
	const blocks = 4 * 3 * 256 * 2
	packed := make([]byte, blocks*entryBytes)
	rng := rand.New(rand.NewPCG(1, 2))
	for i, blk := range rng.Perm(blocks) {
		e := packed[i*entryBytes:]
		for q := range 4 {
			binary.LittleEndian.PutUint64(e[blockBytes+8*q:], ^uint64(0))
		}
		binary.LittleEndian.PutUint32(e[blockBytes+32:], uint32(3*blk)) // not adjacent: a range per block
	}
	b.SetBytes(int64(len(packed)))
	for b.Loop() {
		d := decodeEntries(packed)
		if len(d.ranges) != blocks {
			b.Fatalf("%d ranges; want %d", len(d.ranges), blocks)
		}
	}
}

// BenchmarkFlightPieces is the host's part of a flight's scan or restore
// before its trip to the device thread: the footprints of four cases of
// three runs of 256 rows of two planes (6,144 windows over twelve filled
// pools) cut into pieces and encoded for the kernels.
func BenchmarkFlightPieces(b *testing.B) {
	const pools, rows, poolBytes = 12, 512, 1 << 29
	var m Memory
	var ws []pool.Window
	for p := range pools {
		m.bl.Fill(pool.Window{Off: p * poolBytes, Len: poolBytes}, uint64(p))
		for r := range rows {
			ws = append(ws, pool.Window{Off: p*poolBytes + r*(poolBytes/rows), Len: 256})
		}
	}
	for b.Loop() {
		small, big := m.windowPieces(ws)
		if len(small) != len(ws) || len(big) != 0 {
			b.Fatalf("%d small and %d big pieces; want %d small", len(small), len(big), len(ws))
		}
		encodePieces(small)
	}
}

// TestSpansCutToWindows: scanning windows as coalesced spans and cutting
// what changed back to the windows gives what scanning each window alone
// gives. The model here is a flag per byte: a window's changed ranges are
// its runs of flagged bytes, its bytes the arena's there.
func TestSpansCutToWindows(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for round := range 200 {
		size := 1 + rng.IntN(20000)
		flag := make([]bool, size)
		mem := make([]byte, size)
		for i := range mem {
			mem[i] = byte(rng.Uint32())
		}
		for range rng.IntN(40) { // runs of changed bytes, some across window edges
			at, n := rng.IntN(size), 1+rng.IntN(600)
			for i := at; i < min(at+n, size); i++ {
				flag[i] = true
			}
		}
		var ws []pool.Window // sorted, apart: gaps of 1 byte to past spanGap
		for at := rng.IntN(50); at < size; {
			n := min(1+rng.IntN(300), size-at)
			ws = append(ws, pool.Window{Off: at, Len: n})
			at += n + 1 + rng.IntN([]int{4, 40, 2 * spanGap}[rng.IntN(3)])
		}
		runs := func(w pool.Window) (out []pool.Window, b []byte) {
			for i := w.Off; i < w.End(); i++ {
				if !flag[i] {
					continue
				}
				if k := len(out); k > 0 && out[k-1].End() == i {
					out[k-1].Len++
				} else {
					out = append(out, pool.Window{Off: i, Len: 1})
				}
				b = append(b, mem[i])
			}
			return out, b
		}
		var want []pool.Window
		var wantBytes []byte
		for _, w := range ws {
			r, b := runs(w)
			want, wantBytes = append(want, r...), append(wantBytes, b...)
		}
		var spanRanges []pool.Window
		var spanBytes []byte
		spans := pool.AppendJoined(nil, ws, spanGap)
		for _, s := range spans {
			r, b := runs(s)
			spanRanges, spanBytes = append(spanRanges, r...), append(spanBytes, b...)
		}
		got, gotBytes := cut(spanRanges, spanBytes, ws)
		if !reflect.DeepEqual(got, want) { // nothing changed is nil, as shm's scan gives it
			t.Fatalf("round %d: %d windows as %d spans: cut gives %v; want %v", round, len(ws), len(spans), got, want)
		}
		if !bytes.Equal(gotBytes, wantBytes) {
			t.Fatalf("round %d: cut's bytes differ from each window's", round)
		}
		if pool.Total(spans) < pool.Total(ws) || len(spans) > len(ws) {
			t.Fatalf("round %d: spans %v do not cover windows %v", round, spans, ws)
		}
	}
}

// TestClipAllMatchesClip: clipping windows to a sparse arena's backed
// windows by binary search gives what intersecting each with every backed
// window gives, in whatever order the windows come (Reset's may overlap).
func TestClipAllMatchesClip(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for round := range 300 {
		var backed, ws []pool.Window
		for off := rng.IntN(64); off < 1<<14; {
			n := 1 + rng.IntN(512)
			backed = append(backed, pool.Window{Off: off, Len: n})
			off += n + 1 + rng.IntN(1024)
		}
		for off := rng.IntN(64); off < 1<<14+512; {
			n := 1 + rng.IntN(2048)
			ws = append(ws, pool.Window{Off: off, Len: n})
			off += n + rng.IntN(600)
		}
		if round%3 == 1 {
			rng.Shuffle(len(ws), func(i, j int) { ws[i], ws[j] = ws[j], ws[i] })
		}
		m := &Memory{backed: backed}
		var want []pool.Window
		for _, w := range ws {
			want = append(want, pool.Intersect(backed, w)...) // each span alone, against every backed window
		}
		if got := m.clipAll(ws); !slices.Equal(got, want) {
			t.Fatalf("round %d: clipAll(%v) over %v = %v, want %v", round, ws, backed, got, want)
		}
	}
}

// BenchmarkClipAll clips a case's spans (an engine cache's: 20,000) to a
// sparse arena of 250 backed windows, by binary search and, as before,
// each span against every backed window.
func BenchmarkClipAll(b *testing.B) {
	var backed, ws []pool.Window
	for i := range 250 {
		backed = append(backed, pool.Window{Off: i << 24, Len: 1 << 22})
	}
	for i := range 20000 {
		ws = append(ws, pool.Window{Off: i * (250 << 24) / 20000, Len: 4096})
	}
	m := &Memory{backed: backed}
	b.Run("search", func(b *testing.B) {
		for b.Loop() {
			m.clipAll(ws)
		}
	})
	b.Run("per-span", func(b *testing.B) {
		for b.Loop() {
			var out []pool.Window
			for _, w := range ws {
				out = append(out, pool.Intersect(backed, w)...)
			}
		}
	})
}
