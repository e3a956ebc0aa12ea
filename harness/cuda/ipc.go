package cuda

import "fmt"

// ipcLazyPeerAccess is CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS: enable peer access
// on first use if the exporter's memory lives on another device.
const ipcLazyPeerAccess = 1

// IpcHandle exports the allocation at p (the base returned by Alloc, not an
// offset into it) as 64 bytes another process can open with IpcOpen. The
// allocation must outlive every importer's IpcClose.
func (d *Device) IpcHandle(p Ptr) ([64]byte, error) {
	var h ipcHandle
	err := d.call(func(a *driverAPI) error {
		var base, size uint64
		if err := check("cuMemGetAddressRange", a.cuMemGetAddressRange(&base, &size, uint64(p))); err != nil {
			return err
		}
		if base != uint64(p) {
			return fmt.Errorf("cuda: IpcHandle(%#x): not an allocation base (the allocation starts at %#x); export the base and pass the offset separately", uint64(p), base)
		}
		return check("cuIpcGetMemHandle", a.cuIpcGetMemHandle(&h, uint64(p)))
	})
	return h.B, err
}

// IpcOpen maps memory exported by another process's IpcHandle into this
// device's context. A process cannot open its own handles.
func (d *Device) IpcOpen(handle [64]byte) (Ptr, error) {
	var p uint64
	err := d.checked("cuIpcOpenMemHandle", func(a *driverAPI) Result {
		return a.cuIpcOpenMemHandle(&p, ipcHandle{B: handle}, ipcLazyPeerAccess)
	})
	if err != nil {
		return 0, fmt.Errorf("open CUDA IPC handle (the exporter must be another live process): %w", err)
	}
	return Ptr(p), nil
}

// IpcClose unmaps memory opened with IpcOpen.
func (d *Device) IpcClose(p Ptr) error {
	return d.checked("cuIpcCloseMemHandle", func(a *driverAPI) Result { return a.cuIpcCloseMemHandle(uint64(p)) })
}
