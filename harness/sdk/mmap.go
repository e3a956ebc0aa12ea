package sdk

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// MapSHM maps a host shared-memory arena read-write.
func MapSHM(path string, size int) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
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
