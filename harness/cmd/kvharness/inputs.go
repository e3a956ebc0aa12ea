package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"
)

// noArgs refuses arguments a command takes none of: a stray word is
// usually a flag's value that lost its flag.
func noArgs(fs *pflag.FlagSet) error {
	if fs.NArg() == 0 {
		return nil
	}
	return fmt.Errorf("%s: unexpected argument %q: %s takes flags only (a value belongs after its flag, as in --cases 500)",
		fs.Name(), fs.Arg(0), fs.Name())
}

// writableFolder checks, before a run that may take minutes, that dir
// exists as a writable folder or can be made: its nearest existing
// ancestor is a folder this user may write. Nothing is created.
func writableFolder(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	for p := abs; ; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		switch {
		case err == nil && !st.IsDir():
			return fmt.Errorf("%s is a file, not a folder", p)
		case err == nil:
			if unix.Access(p, unix.W_OK|unix.X_OK) != nil {
				return fmt.Errorf("folder %s is not writable", p)
			}
			return nil
		case !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR):
			return err
		}
		if p == filepath.Dir(p) {
			return fmt.Errorf("no folder of %s exists", abs)
		}
	}
}

// samePath reports whether a and b name the same file or folder: the same
// one found by Stat (through links, or spelt two ways), or, for paths that
// do not exist yet, the same absolute path.
func samePath(a, b string) bool {
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	if errA == nil && errB == nil {
		return os.SameFile(sa, sb)
	}
	absA, errA := filepath.Abs(a)
	absB, errB := filepath.Abs(b)
	return errA == nil && errB == nil && absA == absB
}

// overwrites names the input among inputs that writing the files outputs
// of folder out would overwrite, or "": no command writes over what it
// reads (merge --out X X destroyed shard X).
func overwrites(out string, outputs []string, inputs ...string) string {
	for _, in := range inputs {
		if samePath(in, out) {
			return in
		}
		for _, o := range outputs {
			if samePath(in, filepath.Join(out, o)) {
				return in
			}
		}
	}
	return ""
}
