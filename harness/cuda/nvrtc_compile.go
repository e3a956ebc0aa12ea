package cuda

import (
	"runtime"
	"unsafe"
)

// compileCUBIN runs NVRTC on src and returns the cubin. opts must name a real
// architecture (sm_XY): only then does NVRTC produce a cubin.
func compileCUBIN(name, src string, opts []string) ([]byte, error) {
	n, err := nvrtc()
	if err != nil {
		return nil, err
	}
	var prog uintptr
	if r := n.nvrtcCreateProgram(&prog, src, name, 0, nil, nil); r != 0 {
		return nil, n.fail("nvrtcCreateProgram", r, name, "")
	}
	defer n.nvrtcDestroyProgram(&prog)
	if r := n.compile(prog, opts); r != 0 {
		return nil, n.fail("nvrtcCompileProgram", r, name, n.log(prog))
	}
	var size uint64
	if r := n.nvrtcGetCUBINSize(prog, &size); r != 0 || size == 0 {
		return nil, n.fail("nvrtcGetCUBINSize (is the architecture a real sm_XY?)", r, name, n.log(prog))
	}
	cubin := make([]byte, size)
	if r := n.nvrtcGetCUBIN(prog, &cubin[0]); r != 0 {
		return nil, n.fail("nvrtcGetCUBIN", r, name, "")
	}
	return cubin, nil
}

// compile passes opts as a C array of C strings. The array is Go memory
// holding Go pointers, which the cgo rules allow only when they are pinned.
func (n *nvrtcAPI) compile(prog uintptr, opts []string) int32 {
	if len(opts) == 0 {
		return n.nvrtcCompileProgram(prog, 0, nil)
	}
	var pin runtime.Pinner
	defer pin.Unpin()
	ptrs := make([]*byte, len(opts))
	for i, o := range opts {
		ptrs[i] = &cString(o)[0]
		pin.Pin(ptrs[i])
	}
	return n.nvrtcCompileProgram(prog, int32(len(ptrs)), unsafe.Pointer(&ptrs[0]))
}

// log is the program's compile log, "" when there is none.
func (n *nvrtcAPI) log(prog uintptr) string {
	var size uint64
	if n.nvrtcGetProgramLogSize(prog, &size) != 0 || size <= 1 {
		return ""
	}
	buf := make([]byte, size)
	if n.nvrtcGetProgramLog(prog, &buf[0]) != 0 {
		return ""
	}
	return goString(&buf[0])
}
