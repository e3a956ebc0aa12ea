package main

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/kvharness/kvharness/harness/arena/shm"
)

// minAddressSpace is the least address space (ulimit -v) a command that
// starts plugins runs under. The Go runtime of the harness and of each Go
// plugin reserves address space as it starts (its heap arenas, a glibc
// arena per thread that enters C), far beyond what it uses: measured on
// the 2-core machine, a check under 1.5 GiB died in the runtime ("fatal
// error: out of memory", the harness's or a plugin's) with 8 MiB in use,
// while under 2 GiB a pool that did not fit was refused with an error,
// and from 3 GiB the default check ran.
const minAddressSpace = 2 << 30

// addressSpace refuses, before anything starts, a limit under which the
// runtime itself, not an arena, would fail: a one-line error instead of a
// crash of the harness or of a plugin.
func addressSpace() error {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_AS, &lim); err != nil || lim.Cur == unix.RLIM_INFINITY || lim.Cur >= minAddressSpace {
		return nil
	}
	return fmt.Errorf("the address-space limit (ulimit -v) is %s; kvharness and each plugin process need at least %s of address space (the Go runtime reserves it as it starts, beyond the pools): raise it, as in ulimit -v unlimited",
		shm.Bytes(int64(lim.Cur)), shm.Bytes(minAddressSpace))
}
