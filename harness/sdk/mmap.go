package sdk

import (
	"context"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kvharness/kvharness/harness/protocol/fdpass"
)

// MapSHM maps a host shared-memory arena read-write. The harness names a
// Unix socket that hands this process the arena's descriptor (package
// fdpass); a path that is no socket is opened as the arena file itself.
func MapSHM(path string, size int) ([]byte, error) {
	f, err := openArena(path)
	if err != nil {
		return nil, fmt.Errorf("open arena: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() < int64(size) {
		return nil, fmt.Errorf("arena file %s is %d bytes, harness says %d", path, st.Size(), size)
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map arena: %w", err)
	}
	return mem, nil
}

// receiveTimeout bounds the wait for an arena's descriptor.
const receiveTimeout = 10 * time.Second

// openArena opens a shared-memory arena named by path: received over the
// socket at path, or opened as a file.
func openArena(path string) (*os.File, error) {
	if st, err := os.Stat(path); err != nil || st.Mode()&os.ModeSocket == 0 {
		return os.OpenFile(path, os.O_RDWR, 0)
	}
	ctx, cancel := context.WithTimeout(context.Background(), receiveTimeout)
	defer cancel()
	fd, err := fdpass.Receive(ctx, path)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), path), nil
}
