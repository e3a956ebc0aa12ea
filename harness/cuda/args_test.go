package cuda

import (
	"runtime"
	"strings"
	"testing"
	"unsafe"
)

func TestPackArgs(t *testing.T) {
	ka, err := packArgs([]any{Ptr(0xdead_beef_0000), int32(-2), uint32(7), int64(-1 << 40), uint64(1 << 63), float32(1.5)})
	if err != nil {
		t.Fatal(err)
	}
	if len(ka.ptrs) != 6 {
		t.Fatalf("%d pointers; want 6", len(ka.ptrs))
	}
	if got := *(*uint64)(ka.ptrs[0]); got != 0xdead_beef_0000 {
		t.Errorf("Ptr arg = %#x", got)
	}
	if got := *(*int32)(ka.ptrs[1]); got != -2 {
		t.Errorf("int32 arg = %d", got)
	}
	if got := *(*uint32)(ka.ptrs[2]); got != 7 {
		t.Errorf("uint32 arg = %d", got)
	}
	if got := *(*int64)(ka.ptrs[3]); got != -1<<40 {
		t.Errorf("int64 arg = %d", got)
	}
	if got := *(*uint64)(ka.ptrs[4]); got != 1<<63 {
		t.Errorf("uint64 arg = %d", got)
	}
	if got := *(*float32)(ka.ptrs[5]); got != 1.5 {
		t.Errorf("float32 arg = %v", got)
	}
	for i, p := range ka.ptrs {
		if uintptr(p)%8 != 0 {
			t.Errorf("argument %d at %p is not 8-byte aligned", i, p)
		}
	}
}

func TestPackArgsParams(t *testing.T) {
	ka, err := packArgs([]any{uint32(9)})
	if err != nil {
		t.Fatal(err)
	}
	var pin runtime.Pinner
	defer pin.Unpin()
	pp := (*[1]unsafe.Pointer)(ka.params(&pin))
	if got := *(*uint32)(pp[0]); got != 9 {
		t.Errorf("params[0] -> %d; want 9", got)
	}
	empty, _ := packArgs(nil)
	if empty.params(&pin) != nil {
		t.Error("params of no arguments is not nil")
	}
}

func TestPackArgsRejects(t *testing.T) {
	for _, bad := range []any{int(1), float64(1), "x", []byte{1}, nil} {
		_, err := packArgs([]any{Ptr(1), bad})
		if err == nil {
			t.Errorf("packArgs accepted %T", bad)
			continue
		}
		if !strings.Contains(err.Error(), "argument 1") {
			t.Errorf("error %q does not say which argument", err)
		}
	}
}

func TestDim3Norm(t *testing.T) {
	if got := (Dim3{X: 5}).norm(); got != (Dim3{5, 1, 1}) {
		t.Errorf("Dim3{X:5}.norm() = %v", got)
	}
	if got := (Dim3{2, 3, 4}).norm(); got != (Dim3{2, 3, 4}) {
		t.Errorf("Dim3{2,3,4}.norm() = %v", got)
	}
}
