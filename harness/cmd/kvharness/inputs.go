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
