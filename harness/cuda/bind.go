package cuda

import (
	"fmt"
	"strings"
	"unsafe"

	"github.com/ebitengine/purego"
)

// symbol pairs a C function name with the Go function variable that will
// call it.
type symbol struct {
	name string
	fn   any // pointer to a func variable
}

// bind resolves every symbol in lib and registers it. purego.RegisterLibFunc
// panics on a missing symbol, so each one is probed with Dlsym first and all
// missing names are reported together.
func bind(lib uintptr, libName string, syms []symbol) error {
	var missing []string
	for _, s := range syms {
		addr, err := purego.Dlsym(lib, s.name)
		if err != nil || addr == 0 {
			missing = append(missing, s.name)
			continue
		}
		purego.RegisterFunc(s.fn, addr)
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s lacks %s", libName, strings.Join(missing, ", "))
	}
	return nil
}

// goString copies a NUL-terminated C string that the library owns.
func goString(p *byte) string {
	if p == nil {
		return ""
	}
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}

// cString returns s as a NUL-terminated byte slice for C.
func cString(s string) []byte { return append([]byte(s), 0) }
