//go:build !linux

package cuda

import (
	"bytes"
	"runtime"
	"strconv"
)

// threadID identifies the caller where there is no gettid: the goroutine id
// from the stack header ("goroutine 17 [running]:"). The worker's goroutine
// is locked to its thread, so it serves the same purpose, more slowly.
func threadID() int64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	id, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return -2
	}
	return id
}
