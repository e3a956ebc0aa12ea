package oracle

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/arena/shm"
	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/rundir"
)

// captureRegion is a 4 KiB pool at 1024 between two 256-byte guards.
var captureRegion = pool.Region{
	GuardBefore: pool.Window{Off: 768, Len: 256},
	Pool:        pool.Window{Off: 1024, Len: 4096},
	GuardAfter:  pool.Window{Off: 5120, Len: 256},
}

func TestCaptureReadsChangedRanges(t *testing.T) {
	shm, err := shm.New(&rundir.Dir{Path: t.TempDir()}, 8192)
	if err != nil {
		t.Fatal(err)
	}
	defer shm.Close()
	if err := shm.Fill(captureRegion.Span(), 9); err != nil {
		t.Fatal(err)
	}
	writes := map[int][]byte{800: {1, 2}, 1024: {3}, 3000: {4, 5, 6}, 5300: {7}}
	for off, b := range writes {
		cur := make([]byte, len(b))
		shm.ReadAt(cur, off)
		for i := range b {
			b[i] = ^cur[i] // differ from the background in every byte
		}
		if err := shm.WriteAt(b, off); err != nil {
			t.Fatal(err)
		}
	}
	shm.WriteAt([]byte{0xff}, 7000) // outside the region: not captured
	d, err := Capture(shm, captureRegion)
	if err != nil {
		t.Fatal(err)
	}
	wantWs := []pool.Window{{Off: -224, Len: 2}, {Off: 0, Len: 1}, {Off: 1976, Len: 3}, {Off: 4276, Len: 1}}
	wantB := append(append(append(append([]byte{}, writes[800]...), writes[1024]...), writes[3000]...), writes[5300]...)
	if !reflect.DeepEqual(d.Windows, wantWs) || !bytes.Equal(d.Bytes, wantB) {
		t.Fatalf("Capture = %v %v; want %v %v", d.Windows, d.Bytes, wantWs, wantB)
	}
}

// changer answers ChangedBytes; its other methods must not be needed.
type changer struct {
	arena.Memory
	ws []pool.Window
	b  []byte
}

func (c changer) ChangedBytes(pool.Window) ([]pool.Window, []byte, error) { return c.ws, c.b, nil }
func (c changer) ReadAt([]byte, int) error                                { return errors.New("ReadAt called") }

func TestCaptureTakesChangedBytes(t *testing.T) {
	c := changer{ws: []pool.Window{{Off: 1030, Len: 2}, {Off: 5200, Len: 1}}, b: []byte{1, 2, 3}}
	d, err := Capture(c, captureRegion)
	if err != nil {
		t.Fatal(err)
	}
	if want := []pool.Window{{Off: 6, Len: 2}, {Off: 4176, Len: 1}}; !reflect.DeepEqual(d.Windows, want) || !bytes.Equal(d.Bytes, c.b) {
		t.Fatalf("Capture = %v %v", d.Windows, d.Bytes)
	}
	c.b = c.b[:2]
	if _, err := Capture(c, captureRegion); err == nil || !strings.Contains(err.Error(), "2 changed bytes for ranges of 3") {
		t.Fatalf("Capture with short bytes: %v; want an error naming the mismatch", err)
	}
}
