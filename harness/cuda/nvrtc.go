package cuda

import (
	"fmt"
	"strings"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// nvrtcCandidates are tried in order: the development symlink, the CUDA 13
// and 12 sonames on the loader path, then the toolkit's default location.
var nvrtcCandidates = []string{
	"libnvrtc.so",
	"libnvrtc.so.13",
	"libnvrtc.so.12",
	"/usr/local/cuda/lib64/libnvrtc.so",
}

// nvrtcAPI holds the NVRTC entry points. Every call returns an nvrtcResult.
type nvrtcAPI struct {
	nvrtcVersion           func(major, minor *int32) int32                                                                     `sym:"nvrtcVersion"`
	nvrtcGetErrorString    func(r int32) string                                                                                `sym:"nvrtcGetErrorString"`
	nvrtcCreateProgram     func(prog *uintptr, src, name string, numHeaders int32, headers, includeNames unsafe.Pointer) int32 `sym:"nvrtcCreateProgram"`
	nvrtcCompileProgram    func(prog uintptr, numOpts int32, opts unsafe.Pointer) int32                                        `sym:"nvrtcCompileProgram"`
	nvrtcGetProgramLogSize func(prog uintptr, n *uint64) int32                                                                 `sym:"nvrtcGetProgramLogSize"`
	nvrtcGetProgramLog     func(prog uintptr, log *byte) int32                                                                 `sym:"nvrtcGetProgramLog"`
	nvrtcGetCUBINSize      func(prog uintptr, n *uint64) int32                                                                 `sym:"nvrtcGetCUBINSize"`
	nvrtcGetCUBIN          func(prog uintptr, cubin *byte) int32                                                               `sym:"nvrtcGetCUBIN"`
	nvrtcDestroyProgram    func(prog *uintptr) int32                                                                           `sym:"nvrtcDestroyProgram"`
}

var (
	nvrtcOnce sync.Once
	nvrtcLib  *nvrtcAPI
	nvrtcErr  error
)

// nvrtc loads NVRTC once per process.
func nvrtc() (*nvrtcAPI, error) {
	nvrtcOnce.Do(func() { nvrtcLib, nvrtcErr = loadNVRTC(nvrtcCandidates) })
	return nvrtcLib, nvrtcErr
}

// loadNVRTC opens the first candidate that loads and has every symbol.
func loadNVRTC(candidates []string) (*nvrtcAPI, error) {
	var reasons []string
	for _, name := range candidates {
		lib, err := dlopen(name, purego.RTLD_NOW|purego.RTLD_LOCAL)
		if err != nil {
			reasons = append(reasons, err.Error())
			continue
		}
		n := new(nvrtcAPI)
		if err := bind(lib, name, symbolsOf(n)); err != nil {
			reasons = append(reasons, err.Error())
			continue
		}
		return n, nil
	}
	return nil, fmt.Errorf("%w: %s; install NVRTC from the CUDA toolkit or add its lib64 directory to LD_LIBRARY_PATH",
		ErrNoNVRTC, strings.Join(reasons, "; "))
}

// NVRTCVersion is the version of the NVRTC library compiles will use.
func NVRTCVersion() (major, minor int, err error) {
	n, err := nvrtc()
	if err != nil {
		return 0, 0, err
	}
	var ma, mi int32
	if r := n.nvrtcVersion(&ma, &mi); r != 0 {
		return 0, 0, n.fail("nvrtcVersion", r, "", "")
	}
	return int(ma), int(mi), nil
}

// CompileError is a failed NVRTC call; Log holds the compiler's messages.
type CompileError struct {
	Program string // the name given to Compile
	Op      string // the NVRTC function that failed
	Code    int
	Msg     string // nvrtcGetErrorString of Code
	Log     string
}

func (e *CompileError) Error() string {
	s := fmt.Sprintf("nvrtc: %s of %q: %s (nvrtcResult %d)", e.Op, e.Program, e.Msg, e.Code)
	if e.Log != "" {
		s += "\n" + strings.TrimRight(e.Log, "\x00\n")
	}
	return s
}

func (n *nvrtcAPI) fail(op string, r int32, program, log string) error {
	return &CompileError{Program: program, Op: op, Code: int(r), Msg: n.nvrtcGetErrorString(r), Log: log}
}
