package layout

import (
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"
)

func mustBuiltin(t *testing.T, name string, d, p int) *Layout {
	t.Helper()
	l, err := Builtin(name, d, p)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestBuiltinGeometry(t *testing.T) {
	for _, tc := range []struct {
		name            string
		d, p            int
		perToken, pageB int
	}{
		{"bf16", 128, 64, 256, 64 * 256},
		{"fp8-paged", 128, 64, 132, 64 * 132},
		{"fp8-rows", 128, 64, 132, 64 * 132},
		{"fp8-paged", 64, 16, 68, 16 * 68},
		{"fp8-ds-mla", 576, 16, 656, 16 * 656},
		{"dsv4-main", 512, 64, 584, 65 * 576}, // ceil(64·584/576)·576
	} {
		l := mustBuiltin(t, tc.name, tc.d, tc.p)
		if l.BytesPerToken() != tc.perToken || l.PageBytes() != tc.pageB {
			t.Errorf("%s D=%d P=%d: %d B/token, %d B/page; want %d, %d",
				tc.name, tc.d, tc.p, l.BytesPerToken(), l.PageBytes(), tc.perToken, tc.pageB)
		}
	}
}

// TestPagedFootprint pins the SGLang indexer page: value at page + off·128,
// scale at page + 128·P + off·4.
func TestPagedFootprint(t *testing.T) {
	l := mustBuiltin(t, "fp8-paged", 128, 64)
	page := 64 * 132
	got := l.Footprint(64*3 + 5)
	want := []Span{{3*page + 5*128, 128}, {3*page + 128*64 + 5*4, 4}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("footprint(197) = %v, want %v", got, want)
	}
	rows := mustBuiltin(t, "fp8-rows", 128, 64)
	if got := rows.Footprint(197); len(got) != 1 || got[0] != (Span{197 * 132, 132}) {
		t.Errorf("rows footprint(197) = %v", got)
	}
}

func TestFootprintOfMinusOneIsBeforeBase(t *testing.T) {
	for _, name := range Names() {
		l := mustBuiltin(t, name, 0, 64)
		for _, s := range l.Footprint(-1) {
			if s.Off >= 0 || s.Off < -l.PageBytes() {
				t.Errorf("%s: slot -1 span %v not within one page before the base", name, s)
			}
		}
	}
}

// TestLocateInvertsFootprint checks every byte of a small pool: Locate and
// Footprint agree, and the only unowned bytes are alignment padding.
func TestLocateInvertsFootprint(t *testing.T) {
	for _, name := range Names() {
		l := mustBuiltin(t, name, 0, 4)
		slots := 10 // not a page multiple: the last page has unowned slots
		owned := make([]int64, l.PoolBytes(slots))
		for i := range owned {
			owned[i] = -1
		}
		for s := range int64(slots) {
			for _, sp := range l.Footprint(s) {
				for o := sp.Off; o < sp.End(); o++ {
					if owned[o] != -1 {
						t.Fatalf("%s: byte %d owned by slots %d and %d", name, o, owned[o], s)
					}
					owned[o] = s
				}
			}
		}
		for o, want := range owned {
			got, ok := l.Locate(o, slots)
			if (want >= 0) != ok || (ok && got.Slot != want) {
				t.Fatalf("%s: Locate(%d) = %+v,%v; footprint says slot %d", name, o, got, ok, want)
			}
			if ok && got.Field == "" {
				t.Fatalf("%s: Locate(%d) names no field", name, o)
			}
		}
	}
}

func TestEncodeFP8(t *testing.T) {
	l := mustBuiltin(t, "fp8-rows", 16, 1)
	row := make([]uint16, 16)
	for i := range row {
		row[i] = Float32ToBF16(float32(i) - 8)
	}
	rec := l.Encode(row)[0]
	s := math.Float32frombits(binary.LittleEndian.Uint32(rec[16:]))
	if s != 8.0/448 {
		t.Fatalf("scale %v, want 8/448", s)
	}
	if rec[0] != EncodeE4M3(-8/s) || DecodeE4M3(rec[0]) != -448 {
		t.Errorf("max-magnitude element encodes to %#02x (%v), want -448", rec[0], DecodeE4M3(rec[0]))
	}
}

func TestEncodeZeroRowUsesFloor(t *testing.T) {
	l := mustBuiltin(t, "fp8-paged", 128, 64)
	recs := l.Encode(make([]uint16, 128))
	for i, b := range recs[0] {
		if b != 0 {
			t.Fatalf("zero row: code %d = %#02x", i, b)
		}
	}
	if s := math.Float32frombits(binary.LittleEndian.Uint32(recs[1])); s != ScaleFloor/448 {
		t.Errorf("zero row scale %v, want 1e-4/448", s)
	}
}

func TestEncodeUE8M0(t *testing.T) {
	l := mustBuiltin(t, "dsv4-main", 512, 64)
	row := make([]uint16, 512)
	row[0] = Float32ToBF16(448) // group 0: scale 1 exactly
	row[64] = Float32ToBF16(450)
	recs := l.Encode(row)
	scales := recs[1][:7]
	if scales[0] != 127 || scales[1] != 128 {
		t.Errorf("ue8m0 exponents %v, want 127 (2^0) and 128 (2^1)", scales[:2])
	}
	if recs[1][7] != 0 {
		t.Errorf("pad byte %#02x, want 0", recs[1][7])
	}
}

func TestInvalidLayouts(t *testing.T) {
	for _, tc := range []struct{ name, json, want string }{
		{"head dim", `{"name":"x","head_dim":100,"fields":[{"name":"v","kind":"bf16","to":100}],"planes":[["v"]]}`, "multiple of 8"},
		{"huge pad", `{"name":"x","head_dim":16,"page_size":65536,"fields":[{"name":"v","kind":"bf16","to":16},{"name":"p","kind":"pad","bytes":281474976710656}],"planes":[["v","p"]]}`, "pad field"},
		{"negative pad", `{"name":"x","head_dim":16,"fields":[{"name":"v","kind":"bf16","to":16},{"name":"p","kind":"pad","bytes":-8}],"planes":[["v","p"]]}`, "pad field"},
		{"token bytes", `{"name":"x","head_dim":16,"fields":[{"name":"a","kind":"pad","bytes":65536},{"name":"b","kind":"pad","bytes":65536},{"name":"c","kind":"pad","bytes":65536},{"name":"d","kind":"pad","bytes":65536},{"name":"e","kind":"pad","bytes":65536},{"name":"f","kind":"pad","bytes":65536},{"name":"g","kind":"pad","bytes":65536},{"name":"h","kind":"pad","bytes":65536},{"name":"i","kind":"pad","bytes":65536},{"name":"j","kind":"pad","bytes":65536},{"name":"k","kind":"pad","bytes":65536},{"name":"l","kind":"pad","bytes":65536},{"name":"m","kind":"pad","bytes":65536},{"name":"n","kind":"pad","bytes":65536},{"name":"o","kind":"pad","bytes":65536},{"name":"p","kind":"pad","bytes":65536},{"name":"q","kind":"pad","bytes":65536}],"planes":[["a","b","c","d","e","f","g","h","i","j","k","l","m","n","o","p","q"]]}`, "bytes per token"},
		{"page bytes", `{"name":"x","head_dim":8192,"page_size":65536,"fields":[{"name":"v","kind":"bf16","to":8192},{"name":"p","kind":"pad","bytes":65536},{"name":"q","kind":"pad","bytes":65536},{"name":"r","kind":"pad","bytes":65536}],"planes":[["v","p","q","r"]]}`, "bytes per page"},
		{"page align", `{"name":"x","head_dim":16,"page_align":4611686018427387904,"fields":[{"name":"v","kind":"bf16","to":16}],"planes":[["v"]]}`, "page align"},
		{"group", `{"name":"x","head_dim":16,"fields":[{"name":"v","kind":"e4m3","to":16,"group":1048576},{"name":"s","kind":"scale-f32","of":"v"}],"planes":[["v","s"]]}`, "group"},
		{"second object", `{"name":"x","head_dim":16,"fields":[{"name":"v","kind":"bf16","to":16}],"planes":[["v"]]} {"name":"y"}`, "after the first JSON value"},
		{"empty", ``, "no JSON value"},
		{"page", `{"name":"x","head_dim":16,"page_size":-1,"fields":[{"name":"v","kind":"bf16","to":16}],"planes":[["v"]]}`, "page size"},
		{"kind", `{"name":"x","head_dim":16,"fields":[{"name":"v","kind":"fp4","to":16}],"planes":[["v"]]}`, "unknown kind"},
		{"no scale", `{"name":"x","head_dim":16,"fields":[{"name":"v","kind":"e4m3","to":16,"group":16}],"planes":[["v"]]}`, "no scale field"},
		{"orphan", `{"name":"x","head_dim":16,"fields":[{"name":"v","kind":"bf16","to":16},{"name":"p","kind":"pad","bytes":1}],"planes":[["v"]]}`, "in no plane"},
		{"typo", `{"name":"x","head_dm":16}`, "unknown field"},
		{"truncated", `{"name":"x","head_dim":16,`, "unexpected EOF"},
	} {
		_, err := Parse([]byte(tc.json), 64)
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want ErrInvalid mentioning %q", tc.name, err, tc.want)
		}
	}
	if _, err := Builtin("bf16", 128, 0); err == nil {
		t.Error("page size 0 accepted")
	}
	if _, err := Builtin("fp8-ds-mla", 128, 64); err == nil {
		t.Error("fp8-ds-mla accepted head dim 128")
	}
}

// TestHeadDimsModelsUse: head sizes real models ship (vLLM's kernel tests
// use 120) make layouts whose rows are whole 16-byte vectors of bf16.
func TestHeadDimsModelsUse(t *testing.T) {
	for _, d := range []int{64, 80, 96, 112, 120, 128, 192, 256} {
		for _, name := range []string{"bf16", "fp8-rows", "fp8-paged"} {
			l, err := Builtin(name, d, 64)
			if err != nil {
				t.Errorf("%s at head dim %d: %v", name, d, err)
				continue
			}
			if l.RowBytes()%16 != 0 {
				t.Errorf("%s at head dim %d: %d-byte rows", name, d, l.RowBytes())
			}
		}
	}
}

// TestLoadIsBounded: a device given as a layout file is refused before
// any read (it is no regular file), not read until the process is killed.
func TestLoadIsBounded(t *testing.T) {
	if _, err := Load("/dev/zero", 64); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("/dev/zero: err = %v, want a not-a-file error", err)
	}
}

func TestLayoutFileRoundTrip(t *testing.T) {
	for _, name := range Names() {
		l := mustBuiltin(t, name, 0, 16)
		back, err := Parse(l.JSON(), 0)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if back.PageBytes() != l.PageBytes() || back.BytesPerToken() != l.BytesPerToken() {
			t.Errorf("%s: reparsed geometry differs", name)
		}
	}
}

// FloorDiv rounds toward minus infinity, so slot -1 is the last slot of
// page -1, for int and int64 alike.
func TestFloorDiv(t *testing.T) {
	for _, tc := range []struct{ a, b, q, r int }{
		{0, 64, 0, 0}, {63, 64, 0, 63}, {64, 64, 1, 0}, {-1, 64, -1, 63}, {-64, 64, -1, 0}, {-65, 64, -2, 63},
	} {
		if q, r := FloorDiv(tc.a, tc.b); q != tc.q || r != tc.r {
			t.Errorf("FloorDiv(%d, %d) = %d, %d; want %d, %d", tc.a, tc.b, q, r, tc.q, tc.r)
		}
		if q, r := FloorDiv(int64(tc.a), int64(tc.b)); q != int64(tc.q) || r != int64(tc.r) {
			t.Errorf("FloorDiv(int64(%d), %d) = %d, %d", tc.a, tc.b, q, r)
		}
	}
}
