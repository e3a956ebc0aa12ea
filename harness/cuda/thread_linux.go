package cuda

import "syscall"

// threadID is the calling OS thread's id.
func threadID() int64 { return int64(syscall.Gettid()) }
