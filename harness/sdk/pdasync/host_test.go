package pdasync

import (
	"bytes"
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/kvharness/kvharness/harness/sdk"
)

// waitState polls an Xfer until it leaves XferPending or a second passes.
func waitState(t *testing.T, x *Xfer) XferState {
	t.Helper()
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Microsecond) {
		if s, err := x.State(); err != nil || s != XferPending {
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
	}
	return XferPending
}

// TestHostTransportGates: a posted handle copies nothing while its gate is
// held and reports pending; once opened it copies every descriptor and
// reports done; once failed it copies the first half and reports failed.
// Handles run in the order their gates open, not the order posted.
func TestHostTransportGates(t *testing.T) {
	src, dst := make([]byte, 64), make([]byte, 64)
	for i := range src {
		src[i] = byte(i + 1)
	}
	gates := make([]byte, 16)
	tr := &hostTransport{src: src, dst: dst, gates: gates}
	two := []sdk.Descriptor{{Src: 0, Dst: 0, Length: 8}, {Src: 8, Dst: 8, Length: 8}}
	x0, err := tr.post(0, two)
	if err != nil {
		t.Fatal(err)
	}
	x1, err := tr.post(1, []sdk.Descriptor{{Src: 16, Dst: 32, Length: 16}, {Src: 32, Dst: 48, Length: 16}})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	if s, _ := x0.State(); s != XferPending || !bytes.Equal(dst, make([]byte, 64)) {
		t.Fatalf("held handle: state %v, dst %v", s, dst)
	}
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&gates[4])), gateFail) // the second posted, failed first
	if s := waitState(t, x1); s != XferFailed || !bytes.Equal(dst[32:48], src[16:32]) || !bytes.Equal(dst[48:], make([]byte, 16)) {
		t.Fatalf("failed handle: state %v, dst %v (want its first copy only)", s, dst)
	}
	if s, _ := x0.State(); s != XferPending {
		t.Fatalf("the first handle ran when the second's gate opened: %v", s)
	}
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&gates[0])), gateGo)
	if s := waitState(t, x0); s != XferDone || !bytes.Equal(dst[:16], src[:16]) {
		t.Fatalf("opened handle: state %v, dst %v", s, dst)
	}
	if err := tr.drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.post(4, two); err == nil {
		t.Error("a gate past the window was accepted")
	}
	if _, err := tr.post(0, []sdk.Descriptor{{Src: 60, Dst: 0, Length: 8}}); err == nil {
		t.Error("a copy leaving the prefill arena was accepted")
	}
}

// TestHostTransportCancels: a reset that finds a handle still held (the
// harness never opened it) cancels it rather than let it land later.
func TestHostTransportCancels(t *testing.T) {
	tr := &hostTransport{src: make([]byte, 8), dst: make([]byte, 8), gates: make([]byte, 4)}
	x, err := tr.post(0, []sdk.Descriptor{{Length: 8}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := tr.drain(ctx); err == nil {
		t.Error("a drain with a handle held reported nothing")
	}
	if s, _ := x.State(); s != XferFailed {
		t.Errorf("the cancelled handle is %v", s)
	}
}

// TestDeviceQueues: the device transport makes no more streams than the
// context has hardware queues, read as CUDA reads its variable, and keeps
// at least one of them for handles the harness opened.
func TestDeviceQueues(t *testing.T) {
	for _, tc := range []struct {
		env         string
		queues, max int
	}{
		{"32", 32, 24}, {"8", 8, 6}, {"2", 2, 1}, {"1", 1, 0},
		{"", 8, 6}, {"0", 8, 6}, {"33", 8, 6}, {"many", 8, 6},
	} {
		t.Setenv("CUDA_DEVICE_MAX_CONNECTIONS", tc.env)
		tr := &deviceTransport{queues: sdk.DeviceQueues()}
		if tr.queues != tc.queues || tr.maxHeld() != tc.max {
			t.Errorf("CUDA_DEVICE_MAX_CONNECTIONS=%q: %d queues, %d held; want %d, %d", tc.env, tr.queues, tr.maxHeld(), tc.queues, tc.max)
		}
	}
}

// TestPageTable: an admission's page table is the identity over the
// pool's pages when the harness sends none (a far pool's would be a
// quarter of a million entries), and is checked entry by entry when it
// sends one.
func TestPageTable(t *testing.T) {
	got, err := pageTable(nil, 4)
	if err != nil || !slices.Equal(got, []int64{0, 1, 2, 3}) {
		t.Fatalf("pageTable(nil, 4) = %v, %v; want the identity", got, err)
	}
	if got, err = pageTable([]uint64{2, 0, 1}, 3); err != nil || !slices.Equal(got, []int64{2, 0, 1}) {
		t.Fatalf("pageTable([2 0 1], 3) = %v, %v", got, err)
	}
	if _, err = pageTable([]uint64{0, 3}, 3); err == nil {
		t.Error("an entry past the pool's pages accepted")
	}
}
