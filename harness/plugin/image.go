package plugin

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"

	"github.com/kvharness/kvharness/harness/internal/inputfile"
)

// A pinned plugin binary is executed from an image: a sealed in-memory
// copy (memfd) made while it is hashed, run as /proc/self/fd/N. What runs
// is then byte for byte what was hashed: a file swapped in by rename
// between the hash and the exec, or rewritten in place, is never run.
// Where memfds cannot be executed (a kernel with vm.memfd_noexec set) the
// image is the opened file itself: a rename then still cannot swap what
// runs, an in-place rewrite by someone who may write the file could.

// mfdExec is MFD_EXEC (Linux 6.3): ask for an executable memfd where the
// default is noexec. Older kernels reject it; they need no asking.
const mfdExec = 0x10

// openImage hashes the file at path into an image and checks the sum.
func openImage(path string, want []byte) (*os.File, error) {
	src, err := inputfile.Open(path, "plugin file")
	if err != nil {
		return nil, fmt.Errorf("hash plugin: %w", err)
	}
	img, err := memImage(src)
	if err != nil { // no executable memfd here: hash and run the opened file
		return src, checkImage(src, path, want)
	}
	src.Close()
	return img, checkImage(img, path, want)
}

// isScript reports whether an image starts with #!: the kernel hands such
// a file's interpreter its path, and /proc/self/fd/N of a close-on-exec
// descriptor is gone by then, so a script runs by its own path.
func isScript(img *os.File) bool {
	var magic [2]byte
	n, _ := img.ReadAt(magic[:], 0)
	return n == 2 && string(magic[:]) == "#!"
}

// memImage copies src into a sealed memfd.
func memImage(src *os.File) (*os.File, error) {
	fd, err := unix.MemfdCreate("kvharness-plugin", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING|mfdExec)
	if err != nil {
		fd, err = unix.MemfdCreate("kvharness-plugin", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	}
	if err != nil {
		return nil, err
	}
	img := os.NewFile(uintptr(fd), "plugin image")
	if _, err := io.Copy(img, src); err != nil {
		img.Close()
		return nil, err
	}
	seals := unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE
	if _, err := unix.FcntlInt(img.Fd(), unix.F_ADD_SEALS, seals); err != nil {
		img.Close()
		return nil, err
	}
	if unix.Access(fmt.Sprintf("/proc/self/fd/%d", img.Fd()), unix.X_OK) != nil {
		img.Close()
		return nil, fmt.Errorf("memfd not executable")
	}
	return img, nil
}

// checkImage hashes the image from its start and compares.
func checkImage(img *os.File, path string, want []byte) error {
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(img, 0, 1<<62)); err != nil {
		img.Close()
		return fmt.Errorf("hash plugin %s: %w", path, err)
	}
	if got := h.Sum(nil); !bytes.Equal(got, want) {
		img.Close()
		return fmt.Errorf("%w: %s has SHA-256 %s, pinned %s; rebuild or re-pin it (kvharness plugins --sha256 prints it)",
			ErrChecksum, path, hex.EncodeToString(got), hex.EncodeToString(want))
	}
	return nil
}

// imagePath is how a child process execs an image the harness holds.
func imagePath(img *os.File) string { return fmt.Sprintf("/proc/self/fd/%d", img.Fd()) }
