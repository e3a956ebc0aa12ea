package shm

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// SpaceError says an arena does not fit where it must live: the file
// system of the run directory (a tmpfs such as /dev/shm is often small:
// Docker gives containers 64 MiB) or the memory left on the machine. A
// sparse file there would not fail at once: the first write to a page the
// file system cannot back kills the harness with SIGBUS.
type SpaceError struct {
	Need, Free int64
	// Dir is the run directory when its file system is short; "" when
	// memory is.
	Dir string
	// Instead is a directory with room for the arena, when one was found.
	Instead string
	// Grew: the arena was made, and its file system filled up as it ran
	// (something else wrote there): pages it held as holes could not be
	// backed when a case needed them.
	Grew bool
}

func (e *SpaceError) Error() string {
	if e.Grew {
		return fmt.Sprintf("%s filled up during the run: %s more of the arena's pages did not fit (%s free); free room there (another process filled it), or set KVHARNESS_RUNTIME_DIR to a directory with more room",
			e.Dir, Bytes(e.Need), Bytes(e.Free))
	}
	if e.Dir == "" {
		return fmt.Sprintf("a shared-memory arena of %s and its baseline copy need %s of memory; %s is available: use fewer slots",
			Bytes(e.Need/2), Bytes(e.Need), Bytes(e.Free))
	}
	fix := "set KVHARNESS_RUNTIME_DIR to a directory with more room, or use fewer slots"
	if e.Instead != "" {
		fix = fmt.Sprintf("set KVHARNESS_RUNTIME_DIR=%s (it has room), or use fewer slots", e.Instead)
	}
	return fmt.Sprintf("a shared-memory arena of %s does not fit in %s, which has %s free: %s", Bytes(e.Need), e.Dir, Bytes(e.Free), fix)
}

// Fits scales a count (slots, say) that asked for e.Need bytes down to one
// that fits in e.Free, with a tenth to spare.
func (e *SpaceError) Fits(asked int) int {
	if e.Need <= 0 {
		return 0
	}
	return int(float64(asked) * float64(e.Free) / float64(e.Need) * 0.9)
}

// Bytes writes a byte count for people: 64.0 MiB, 28.6 GiB.
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}

// checkRoom refuses an arena of size bytes in dir when its file system or
// the machine's memory cannot hold it. The harness keeps a baseline copy
// of the arena in its own memory, so memory must hold both.
//
// Memory is checked first: the harness scans the whole arena after every
// case, so an arena in a disk directory is still, in effect, in memory,
// and no directory is a way around too little of it.
func checkRoom(dir string, size int64) error {
	if avail, ok := memAvailable(); ok && 2*size > avail {
		return &SpaceError{Need: 2 * size, Free: avail}
	}
	if free, ok := freeSpace(dir); ok && size > free {
		return &SpaceError{Need: size, Free: free, Dir: dir, Instead: roomFor(size, dir)}
	}
	return nil
}

// freeSpace is what an unprivileged user may still write in dir's file
// system.
func freeSpace(dir string) (int64, bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return int64(st.Bavail) * st.Bsize, true
}

// roomFor names a usual place with size bytes free, other than not.
func roomFor(size int64, not string) string {
	for _, d := range []string{os.TempDir(), "/var/tmp"} {
		if strings.HasPrefix(not, d+"/") || unix.Access(d, unix.W_OK) != nil {
			continue
		}
		if free, ok := freeSpace(d); ok && free > size+size/8 {
			return d
		}
	}
	return ""
}

// memAvailable is the kernel's estimate of memory available without
// swapping (MemAvailable in /proc/meminfo), or false where it is not
// known.
func memAvailable() (int64, bool) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) >= 2 && fields[0] == "MemAvailable:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}

// reserve backs every byte of the file with storage now (fallocate), so a
// full file system is an error here rather than a SIGBUS at the first
// write. Where fallocate is not supported the file is sized sparsely,
// after checkRoom has said the space is there.
func reserve(f *os.File, size int64) error {
	err := unix.Fallocate(int(f.Fd()), 0, 0, size)
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
		return f.Truncate(size)
	}
	return err
}

// addressSpaceHint says, for a mapping refused for want of address space,
// what limit refused it and what to do.
func addressSpaceHint(err error) string {
	var lim unix.Rlimit
	if !errors.Is(err, unix.ENOMEM) || unix.Getrlimit(unix.RLIMIT_AS, &lim) != nil || lim.Cur == unix.RLIM_INFINITY {
		return ""
	}
	return fmt.Sprintf(" (the address-space limit, ulimit -v, is %s): raise the limit, or use fewer slots", Bytes(int64(lim.Cur)))
}
