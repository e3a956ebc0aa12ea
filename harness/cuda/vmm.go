package cuda

import (
	"errors"
	"fmt"
	"syscall"
	"unsafe"
)

// The virtual memory management (VMM) API's constants that Shared uses.
const (
	memAllocationTypePinned   = 1 // CU_MEM_ALLOCATION_TYPE_PINNED
	memHandleTypePosixFD      = 1 // CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
	memLocationTypeDevice     = 1 // CU_MEM_LOCATION_TYPE_DEVICE
	memAccessReadWrite        = 3 // CU_MEM_ACCESS_FLAGS_PROT_READWRITE
	memGranularityRecommended = 1 // CU_MEM_ALLOC_GRANULARITY_RECOMMENDED
)

// memLocation is CUmemLocation.
type memLocation struct{ typ, id int32 }

// memAllocationProp is CUmemAllocationProp (32 bytes).
type memAllocationProp struct {
	typ          int32
	handleTypes  int32
	location     memLocation
	win32        uintptr
	compression  uint8
	rdmaCapable  uint8
	usage        uint16
	reservedFlag [4]uint8
}

// memAccessDesc is CUmemAccessDesc.
type memAccessDesc struct {
	location memLocation
	flags    int32
}

// vmmAPI holds the VMM entry points. They are optional: a driver without
// them still runs everything but Shared.
type vmmAPI struct {
	cuMemGetAllocationGranularity  func(g *uint64, prop *memAllocationProp, option int32) Result              `sym:"cuMemGetAllocationGranularity"`
	cuMemCreate                    func(h *uint64, size uint64, prop *memAllocationProp, flags uint64) Result `sym:"cuMemCreate"`
	cuMemRelease                   func(h uint64) Result                                                      `sym:"cuMemRelease"`
	cuMemAddressReserve            func(p *uint64, size, align, addr, flags uint64) Result                    `sym:"cuMemAddressReserve"`
	cuMemAddressFree               func(p, size uint64) Result                                                `sym:"cuMemAddressFree"`
	cuMemMap                       func(p, size, offset, h, flags uint64) Result                              `sym:"cuMemMap"`
	cuMemUnmap                     func(p, size uint64) Result                                                `sym:"cuMemUnmap"`
	cuMemSetAccess                 func(p, size uint64, desc *memAccessDesc, count uint64) Result             `sym:"cuMemSetAccess"`
	cuMemExportToShareableHandle   func(out unsafe.Pointer, h uint64, typ int32, flags uint64) Result         `sym:"cuMemExportToShareableHandle"`
	cuMemImportFromShareableHandle func(h *uint64, osHandle uintptr, typ int32) Result                        `sym:"cuMemImportFromShareableHandle"`
}

// errNoVMM says the driver lacks the VMM entry points.
var errNoVMM = errors.New("cuda: this driver has no virtual memory management API (cuMemCreate); use Alloc and IpcHandle")

// Shared is device memory another process maps through a file descriptor
// (the VMM API), where an IPC handle leaves the mapping to the driver. Each
// side maps it at an address aligned to the allocation granularity, so the
// GPU translates it with large pages in both processes; an IPC mapping in
// the importer can come out slower for scattered accesses.
type Shared struct {
	d      *Device
	ptr    Ptr
	size   int // mapped bytes, a multiple of the granularity
	handle uint64
	// A sparse Shared (AllocSparse) reserves span bytes and maps only
	// pieces of them, each its own allocation (handles[i] backs
	// pieces[i]): the driver maps an allocation whole, from its start.
	span    int
	pieces  []Piece
	handles []uint64
}

// Ptr is the mapping's device address in this process.
func (s *Shared) Ptr() Ptr { return s.ptr }

// Size is the mapped size: the requested size rounded up to the
// allocation granularity.
func (s *Shared) Size() int { return s.size }

// location is this device, for allocation and access.
func (d *Device) location() memLocation { return memLocation{memLocationTypeDevice, d.dev} }

func (d *Device) sharedProp() memAllocationProp {
	return memAllocationProp{typ: memAllocationTypePinned, handleTypes: memHandleTypePosixFD, location: d.location()}
}

// AllocShared allocates at least n bytes of device memory that ExportFD
// can share, mapped into this process. The memory is not cleared.
func (d *Device) AllocShared(n int) (*Shared, error) {
	if n <= 0 {
		return nil, fmt.Errorf("cuda: AllocShared(%d): size must be positive", n)
	}
	s := &Shared{d: d}
	err := d.vmmCall(func(a *driverAPI, v *vmmAPI) error {
		prop := d.sharedProp()
		g, err := granularity(v, &prop)
		if err != nil {
			return err
		}
		s.size = int((uint64(n) + g - 1) / g * g)
		if err := check("cuMemCreate", v.cuMemCreate(&s.handle, uint64(s.size), &prop, 0)); err != nil {
			return err
		}
		return s.mapOrRelease(v, g)
	})
	if err != nil {
		return nil, fmt.Errorf("allocate %d bytes of shareable device memory: %w", n, err)
	}
	return s, nil
}

// ImportShared maps memory that another process exported with ExportFD;
// size is the exporter's Size. The caller may close fd afterwards.
func (d *Device) ImportShared(fd, size int) (*Shared, error) {
	if size <= 0 {
		return nil, fmt.Errorf("cuda: ImportShared of %d bytes: size must be positive", size)
	}
	s := &Shared{d: d, size: size}
	err := d.vmmCall(func(a *driverAPI, v *vmmAPI) error {
		prop := d.sharedProp()
		g, err := granularity(v, &prop)
		if err != nil {
			return err
		}
		if uint64(size)%g != 0 {
			return fmt.Errorf("cuda: ImportShared: size %d is not a multiple of the granularity %d; pass the exporter's Size", size, g)
		}
		if err := check("cuMemImportFromShareableHandle", v.cuMemImportFromShareableHandle(&s.handle, uintptr(fd), memHandleTypePosixFD)); err != nil {
			return err
		}
		return s.mapOrRelease(v, g)
	})
	if err != nil {
		return nil, fmt.Errorf("import shared device memory from fd %d: %w", fd, err)
	}
	return s, nil
}

// granularity is the recommended allocation granularity for prop: the
// unit of sizes, and the alignment of both processes' mappings.
func granularity(v *vmmAPI, prop *memAllocationProp) (uint64, error) {
	var g uint64
	err := check("cuMemGetAllocationGranularity", v.cuMemGetAllocationGranularity(&g, prop, memGranularityRecommended))
	return g, err
}

// mapOrRelease maps s here (mapHere), releasing its handle if that fails.
func (s *Shared) mapOrRelease(v *vmmAPI, align uint64) error {
	if err := s.mapHere(v, align); err != nil {
		v.cuMemRelease(s.handle)
		return err
	}
	return nil
}

// mapHere reserves an address range aligned to align, maps the allocation
// there and makes it readable and writable by this device.
func (s *Shared) mapHere(v *vmmAPI, align uint64) error {
	var p uint64
	if err := check("cuMemAddressReserve", v.cuMemAddressReserve(&p, uint64(s.size), align, 0, 0)); err != nil {
		return err
	}
	if err := check("cuMemMap", v.cuMemMap(p, uint64(s.size), 0, s.handle, 0)); err != nil {
		v.cuMemAddressFree(p, uint64(s.size))
		return err
	}
	desc := memAccessDesc{location: s.d.location(), flags: memAccessReadWrite}
	if err := check("cuMemSetAccess", v.cuMemSetAccess(p, uint64(s.size), &desc, 1)); err != nil {
		v.cuMemUnmap(p, uint64(s.size))
		v.cuMemAddressFree(p, uint64(s.size))
		return err
	}
	s.ptr = Ptr(p)
	return nil
}

// ExportFD returns a new file descriptor for dense memory (AllocShared),
// to be passed to another process (over a Unix socket, or as an
// inherited file); the caller closes it. It is close-on-exec, set under
// the fork lock, so a plugin started meanwhile does not inherit it (and
// keep the memory alive after the harness frees it).
func (s *Shared) ExportFD() (int, error) {
	if s != nil && s.pieces != nil {
		return -1, fmt.Errorf("cuda: ExportFD of a sparse reservation of %d pieces; use ExportFDs", len(s.pieces))
	}
	fds, err := s.ExportFDs()
	if err != nil {
		return -1, err
	}
	return fds[0], nil
}

// ExportFDs is ExportFD for any Shared: one descriptor for dense memory,
// one per piece, in order, for a sparse reservation.
func (s *Shared) ExportFDs() ([]int, error) {
	var fds []int
	syscall.ForkLock.RLock()
	err := s.dev().vmmCall(func(a *driverAPI, v *vmmAPI) error {
		handles := s.handles
		if s.pieces == nil {
			handles = []uint64{s.handle}
		}
		for _, h := range handles {
			var fd int32 = -1
			if err := check("cuMemExportToShareableHandle", v.cuMemExportToShareableHandle(unsafe.Pointer(&fd), h, memHandleTypePosixFD, 0)); err != nil {
				return err
			}
			syscall.CloseOnExec(int(fd))
			fds = append(fds, int(fd))
		}
		return nil
	})
	syscall.ForkLock.RUnlock()
	if err != nil {
		for _, fd := range fds {
			syscall.Close(fd)
		}
		return nil, fmt.Errorf("export shared device memory: %w", err)
	}
	return fds, nil
}

// dev is s's device; nil for a nil s, whose calls then fail as a nil
// Device's do.
func (s *Shared) dev() *Device {
	if s == nil {
		return nil
	}
	return s.d
}

// Free unmaps the memory here and releases this process's handle; the
// memory itself goes when every process has released it.
func (s *Shared) Free() error {
	if s == nil || s.ptr == 0 {
		return nil
	}
	err := s.d.vmmCall(func(a *driverAPI, v *vmmAPI) error {
		if s.pieces != nil {
			return s.freeSparse(v)
		}
		return errors.Join(
			check("cuMemUnmap", v.cuMemUnmap(uint64(s.ptr), uint64(s.size))),
			check("cuMemAddressFree", v.cuMemAddressFree(uint64(s.ptr), uint64(s.size))),
			check("cuMemRelease", v.cuMemRelease(s.handle)))
	})
	s.ptr = 0
	return err
}

// vmmCall is call with the VMM entry points, or errNoVMM.
func (d *Device) vmmCall(f func(a *driverAPI, v *vmmAPI) error) error {
	return d.call(func(a *driverAPI) error {
		if a.vmm == nil {
			return errNoVMM
		}
		return f(a, a.vmm)
	})
}
