package cudapool

import (
	"errors"
	"reflect"
	"testing"

	"github.com/kvharness/kvharness/harness/cuda"
	"github.com/kvharness/kvharness/harness/pool"
)

func TestAppendDiff(t *testing.T) {
	want := []byte{0, 0, 0, 0, 0, 0, 0, 0}
	got := []byte{0, 1, 1, 0, 0, 0, 0, 9}
	out := appendDiff(nil, got, want, 100)
	if exp := []pool.Window{{Off: 101, Len: 2}, {Off: 107, Len: 1}}; !reflect.DeepEqual(out, exp) {
		t.Fatalf("appendDiff = %v; want %v", out, exp)
	}
	// The next block starts where the last change ended: one range.
	out = appendDiff(out, []byte{5, 0}, []byte{0, 0}, 108)
	if exp := []pool.Window{{Off: 101, Len: 2}, {Off: 107, Len: 2}}; !reflect.DeepEqual(out, exp) {
		t.Fatalf("appendDiff across blocks = %v; want %v", out, exp)
	}
	if out := appendDiff(nil, want, want, 0); out != nil {
		t.Fatalf("appendDiff of equal bytes = %v; want nil", out)
	}
}

// TestNewWithoutDevice: New fails cleanly, with ErrNoDriver where there is
// no driver, rather than panicking.
func TestNewWithoutDevice(t *testing.T) {
	_, err := New(nil, 1<<20)
	if err == nil {
		t.Fatal("New(nil device) succeeded")
	}
	if cuda.Available() != nil && !errors.Is(err, cuda.ErrNoDriver) {
		t.Fatalf("New without a driver = %v; want an error wrapping cuda.ErrNoDriver", err)
	}
}
