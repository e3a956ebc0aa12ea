package cuda

import (
	"fmt"
	"runtime"

	"github.com/ebitengine/purego"
)

// dlopen opens a shared library with its failure's reason intact: dlerror
// reports the last failure of the calling thread, and a goroutine can move
// to another thread between the dlopen and the dlerror that purego makes
// (on a busy machine the reason then came back empty).
func dlopen(path string, mode int) (uintptr, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	lib, err := purego.Dlopen(path, mode)
	if err != nil && err.Error() == "" {
		err = fmt.Errorf("%s: cannot open shared object file", path)
	}
	return lib, err
}
