package cuda

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unsafe"
)

// Module is a cubin loaded into a device's context.
type Module struct {
	d    *Device
	h    uintptr
	name string
}

// Function is a kernel of a Module, found by its extern "C" name.
type Function struct {
	m    *Module
	h    uintptr
	name string
}

// Compile builds CUDA C src with NVRTC for the device's architecture and
// loads it. name labels the program in errors and logs. opts are NVRTC
// options such as "-DN=4", "-lineinfo" or "--use_fast_math" (NVRTC has no
// -O3: it optimises device code by default); --gpu-architecture=sm_XY is
// added unless given, and so is the CUDA toolkit's include directory when
// one is installed. The cubin is cached in memory and on disk by (source,
// options, architecture), so only the first compile pays for NVRTC.
func (d *Device) Compile(name, src string, opts ...string) (*Module, error) {
	if err := d.usable(); err != nil {
		return nil, err
	}
	opts = withDefaults(opts, d.Arch(), toolkitInclude(includeCandidates()))
	key := cacheKey(src, opts, d.Arch())
	c := processCache()
	compile := func() ([]byte, error) { return compileCUBIN(name, src, opts) }
	cubin, fromDisk, err := c.get(key, compile)
	if err != nil {
		return nil, fmt.Errorf("compile %s for %s: %w", name, d.Arch(), err)
	}
	m, err := d.loadModule(name, cubin)
	if err != nil && fromDisk {
		// A damaged or foreign file in the cache: drop it and build afresh.
		c.evict(key)
		if cubin, _, err = c.get(key, compile); err == nil {
			m, err = d.loadModule(name, cubin)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("load module %s: %w", name, err)
	}
	return m, nil
}

// withDefaults appends --gpu-architecture=arch unless opts already choose
// one, then the toolkit include directory (if any) after the caller's own
// include paths, so theirs are searched first.
func withDefaults(opts []string, arch, include string) []string {
	out := append([]string(nil), opts...)
	if !slices.ContainsFunc(opts, isArchOption) {
		out = append(out, "--gpu-architecture="+arch)
	}
	if include != "" {
		out = append(out, "--include-path="+include)
	}
	return out
}

func isArchOption(o string) bool {
	return strings.HasPrefix(o, "--gpu-architecture") || strings.HasPrefix(o, "-arch")
}

// includeCandidates are the places a CUDA toolkit's headers may be, in order
// of preference: $CUDA_HOME, $CUDA_PATH, then the default install.
func includeCandidates() []string {
	var dirs []string
	for _, env := range []string{"CUDA_HOME", "CUDA_PATH"} {
		if d := os.Getenv(env); d != "" {
			dirs = append(dirs, filepath.Join(d, "include"))
		}
	}
	return append(dirs, "/usr/local/cuda/include")
}

// toolkitInclude is the first candidate directory that exists, or "". NVRTC
// has no include search path of its own: a header outside its built-in set,
// such as cuda_fp8.h, is found only through one.
func toolkitInclude(candidates []string) string {
	for _, d := range candidates {
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			return d
		}
	}
	return ""
}

// loadModule loads a cubin (or fatbin) image into the context.
func (d *Device) loadModule(name string, image []byte) (*Module, error) {
	m := &Module{d: d, name: name}
	return created(d, m, "cuModuleLoadData", func(a *driverAPI) Result {
		return a.cuModuleLoadData(&m.h, unsafe.Pointer(&image[0]))
	})
}

func (m *Module) dev() *Device {
	if m == nil {
		return nil
	}
	return m.d
}

func (m *Module) label() string {
	if m == nil {
		return "<nil module>"
	}
	return m.name
}

// Function looks up a kernel by name; kernels must be extern "C" so the
// name is not mangled.
func (m *Module) Function(name string) (*Function, error) {
	f := &Function{m: m, name: name}
	err := m.dev().checked("cuModuleGetFunction", func(a *driverAPI) Result {
		return a.cuModuleGetFunction(&f.h, m.h, name)
	})
	if err != nil {
		return nil, fmt.Errorf("kernel %q in module %s (is it extern \"C\"?): %w", name, m.label(), err)
	}
	return f, nil
}

// Unload releases the module; its Functions become invalid.
func (m *Module) Unload() error {
	return m.dev().checked("cuModuleUnload", func(a *driverAPI) Result { return a.cuModuleUnload(m.h) })
}
