package doorbell

import (
	"testing"
	"time"
	"unsafe"
)

// window is a 64-byte aligned doorbell window in ordinary memory: the
// futexes work within one process as across two.
func window(t *testing.T) *Box {
	t.Helper()
	buf := make([]byte, Size+64)
	off := int((64 - uintptr(unsafe.Pointer(&buf[0]))%64) % 64)
	b, err := Open(buf[off : off+Size])
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// serve runs Serve from last on its own goroutine, answering each request
// with its length, and stops it at cleanup.
func serve(t *testing.T, b *Box, last uint32) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.Serve(last, func(req []byte) (uint32, string) { return uint32(len(req)), string(req) })
	}()
	t.Cleanup(func() { b.Stop(); <-done })
}

// TestRoundTrip: a posted request is answered with the handler's code and
// message.
func TestRoundTrip(t *testing.T) {
	b := window(t)
	serve(t, b, b.Begin())
	for _, req := range []string{"one", "second request"} {
		seq, err := b.Post([]byte(req))
		if err != nil {
			t.Fatal(err)
		}
		if !b.Wait(seq, 5*time.Second) {
			t.Fatalf("no answer to %q", req)
		}
		if code, msg, _ := b.Answer(); code != uint32(len(req)) || msg != req {
			t.Errorf("answer to %q: code %d message %q", req, code, msg)
		}
	}
}

// TestPostBeforeServeRuns: the harness may post as soon as the plugin's
// attach answers, before the goroutine that serves has run at all (a busy
// machine): the request is still answered, because Serve starts after the
// sequence Begin read, not after whatever it finds when it first runs.
func TestPostBeforeServeRuns(t *testing.T) {
	b := window(t)
	last := b.Begin()
	seq, err := b.Post([]byte("early"))
	if err != nil {
		t.Fatal(err)
	}
	serve(t, b, last)
	if !b.Wait(seq, 5*time.Second) {
		t.Fatal("a request posted before Serve ran was never answered")
	}
}

// TestAbandonedRequestIsNotServed: a request posted before Begin (one a
// harness gave up on, before the plugin attached again) is never taken up.
func TestAbandonedRequestIsNotServed(t *testing.T) {
	b := window(t)
	old, err := b.Post([]byte("abandoned"))
	if err != nil {
		t.Fatal(err)
	}
	serve(t, b, b.Begin())
	if b.Wait(old, 50*time.Millisecond) {
		t.Fatal("a request posted before Begin was answered")
	}
	seq, _ := b.Post([]byte("new"))
	if !b.Wait(seq, 5*time.Second) {
		t.Fatal("no answer to the request after Begin")
	}
}
