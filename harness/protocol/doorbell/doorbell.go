// Package doorbell is the shared-memory lane of StoreBatch. A gRPC round
// trip costs both processes some 70-150 µs of CPU (HTTP/2 framing, TLS,
// several goroutine handoffs a side); a checked case on a CPU is not much
// more than that, so the transport was most of it. A doorbell is a small
// window of a host shared-memory arena both processes map: the harness
// writes a serialized StoreBatchRequest into it and rings (bumps a
// sequence word and wakes a futex on it), the plugin runs the request as
// it would the RPC, writes the status in place and rings back. A round
// trip is two futex wakes and two waits.
//
// The window's layout, in bytes from its start (little-endian words):
//
//	0     uint32  request sequence: the harness bumps it to post (futex)
//	64    uint32  answer sequence: the plugin sets it to the request's (futex)
//	128   uint32  stop: the plugin's own flag to end Serve (release, detach)
//	192   uint32  request length
//	256   uint32  answer status code (gRPC codes)
//	260   uint32  answer message length
//	264   uint64  handler time, ns
//	320   ...     answer message, up to MaxMessage bytes
//	4096  ...     request, up to MaxRequest bytes
//
// Only the harness posts and only the plugin answers, one request at a
// time; the words on separate cache lines keep the two sides from
// sharing a line they both write. Sequences are never reset: a plugin that
// attaches again (or a new process) starts serving from the request word
// as it finds it, so a request abandoned by the harness is never taken
// up twice. The futexes are shared (not
// FUTEX_PRIVATE): the two processes map the same file.
package doorbell

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Layout offsets; see the package comment.
const (
	offReq     = 0
	offAnswer  = 64
	offStop    = 128
	offReqLen  = 192
	offCode    = 256
	offMsgLen  = 260
	offHandler = 264
	offMsg     = 320
	offRequest = 4096

	// MaxMessage bytes of an answer's message are kept; longer ones are cut.
	MaxMessage = offRequest - offMsg
	// MaxRequest is the largest request a doorbell carries; a larger one
	// goes by gRPC.
	MaxRequest = 60 << 10
	// Size is a doorbell window's size.
	Size = offRequest + MaxRequest
)

// ErrTooLarge is returned by Post for a request past MaxRequest.
var ErrTooLarge = errors.New("doorbell: request too large")

// Box is a doorbell window of a shared mapping.
type Box struct {
	mem []byte
}

// Open views mem, a window of a shared mapping, as a doorbell.
func Open(mem []byte) (*Box, error) {
	if len(mem) < Size {
		return nil, fmt.Errorf("doorbell window of %d bytes; want %d", len(mem), Size)
	}
	if uintptr(unsafe.Pointer(&mem[0]))%64 != 0 {
		return nil, fmt.Errorf("doorbell window not 64-byte aligned")
	}
	return &Box{mem: mem[:Size]}, nil
}

func (b *Box) word(off int) *uint32 { return (*uint32)(unsafe.Pointer(&b.mem[off])) }

// Post writes req and rings; it returns the sequence whose answer to wait
// for.
func (b *Box) Post(req []byte) (uint32, error) {
	if len(req) > MaxRequest {
		return 0, ErrTooLarge
	}
	copy(b.mem[offRequest:], req)
	atomic.StoreUint32(b.word(offReqLen), uint32(len(req)))
	seq := atomic.LoadUint32(b.word(offReq)) + 1
	atomic.StoreUint32(b.word(offReq), seq) // after the request: a release
	wake(b.word(offReq))
	return seq, nil
}

// Wait waits up to d for the answer to seq and reports whether it came.
func (b *Box) Wait(seq uint32, d time.Duration) bool {
	end := time.Now().Add(d)
	for {
		got := atomic.LoadUint32(b.word(offAnswer))
		if got == seq {
			return true
		}
		left := time.Until(end)
		if left <= 0 {
			return false
		}
		wait(b.word(offAnswer), got, left)
	}
}

// Answer is the last answer: its status code, message and the plugin's
// handler time.
func (b *Box) Answer() (code uint32, msg string, handler time.Duration) {
	n := min(int(atomic.LoadUint32(b.word(offMsgLen))), MaxMessage)
	ns := *(*uint64)(unsafe.Pointer(&b.mem[offHandler]))
	return atomic.LoadUint32(b.word(offCode)), string(b.mem[offMsg : offMsg+n]), time.Duration(ns)
}

// Begin readies the window for a Serve: it clears a previous Serve's
// stop and returns the request word as it finds it, the sequence Serve
// starts after. The plugin calls it once a previous Serve has returned,
// and before its attach answers: the harness may post as soon as it has
// the answer, and a Serve that read the word itself, later, on a busy
// machine, would take that first request for an old one and never answer.
func (b *Box) Begin() uint32 {
	atomic.StoreUint32(b.word(offStop), 0)
	return atomic.LoadUint32(b.word(offReq))
}

// Handler runs one request and returns its status code and message.
type Handler func(req []byte) (code uint32, msg string)

// Serve answers the requests posted after sequence last (Begin's) with h
// until Stop. It runs on a locked OS thread of its own: it spends its life
// in futex waits.
func (b *Box) Serve(last uint32, h Handler) {
	for {
		seq := atomic.LoadUint32(b.word(offReq))
		if atomic.LoadUint32(b.word(offStop)) != 0 {
			return
		}
		if seq == last {
			wait(b.word(offReq), seq, time.Second)
			continue
		}
		n := min(int(atomic.LoadUint32(b.word(offReqLen))), MaxRequest)
		start := time.Now()
		code, msg := h(b.mem[offRequest : offRequest+n])
		if len(msg) > MaxMessage {
			msg = msg[:MaxMessage]
		}
		copy(b.mem[offMsg:], msg)
		*(*uint64)(unsafe.Pointer(&b.mem[offHandler])) = uint64(time.Since(start).Nanoseconds())
		atomic.StoreUint32(b.word(offMsgLen), uint32(len(msg)))
		atomic.StoreUint32(b.word(offCode), code)
		atomic.StoreUint32(b.word(offAnswer), seq) // after the answer: a release
		wake(b.word(offAnswer))
		last = seq
	}
}

// Stop makes Serve return; the caller waits for it before unmapping.
func (b *Box) Stop() {
	atomic.StoreUint32(b.word(offStop), 1)
	wake(b.word(offReq))
}

// Futex operations (linux/futex.h), shared between processes.
const (
	futexWait = 0
	futexWake = 1
)

// wait sleeps while *addr holds val, for at most d (or until a wake).
func wait(addr *uint32, val uint32, d time.Duration) {
	ts := unix.NsecToTimespec(d.Nanoseconds())
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWait, uintptr(val),
		uintptr(unsafe.Pointer(&ts)), 0, 0)
}

// wake wakes the waiter on addr, if there is one.
func wake(addr *uint32) {
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWake, 1, 0, 0, 0)
}
