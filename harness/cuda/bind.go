package cuda

import (
	"fmt"
	"reflect"
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

// symbolsOf lists the func fields of the struct api points to that carry a
// `sym:"name"` tag, each paired with the C symbol it names. The tag keeps a
// field and its (often versioned, _v2) symbol on one line, so an entry point
// is declared in one place. Fields without the tag are left alone.
func symbolsOf(api any) []symbol {
	v := reflect.ValueOf(api).Elem()
	var syms []symbol
	for i := range v.NumField() {
		f := v.Type().Field(i)
		name, ok := f.Tag.Lookup("sym")
		if !ok {
			continue
		}
		// The fields are unexported: reach them through their address,
		// as Interface on the field itself would refuse.
		fn := reflect.NewAt(f.Type, unsafe.Pointer(v.Field(i).UnsafeAddr())).Interface()
		syms = append(syms, symbol{name, fn})
	}
	return syms
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
