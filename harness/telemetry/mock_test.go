package telemetry

import (
	"fmt"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh200"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

const gib = 1 << 30

// fakeState is what the mock device reports for the fields the dgxh200
// mock leaves unimplemented (their *Func fields are nil and would panic).
type fakeState struct {
	smMHz, memMHz    uint32
	tempC            uint32
	powerMW, limitMW uint32
	pstate           nvml.Pstates
	events           uint64
	usedBytes        uint64
}

// idleH200 is an idle H200 as NVML shows it: SM clock parked, memory clock
// at max, P0, gpu_idle.
func idleH200() fakeState {
	return fakeState{
		smMHz: 345, memMHz: 3201, tempC: 31,
		powerMW: 74_512, limitMW: 700_000,
		pstate: nvml.PSTATE_0, events: nvml.ClocksEventReasonGpuIdle,
		usedBytes: gib / 2,
	}
}

// newH200 returns the dgxh200 mock (8 × "NVIDIA H200 141GB HBM3e") with
// fixed UUIDs, PCI bus ids and every field Collect reads answered, all
// devices idle.
func newH200(t *testing.T) *server.Server {
	t.Helper()
	s := dgxh200.New()
	if len(s.Devices) != 8 {
		t.Fatalf("dgxh200 mock has %d devices, want 8", len(s.Devices))
	}
	for i := range s.Devices {
		setState(device(t, s, i), idleH200())
	}
	return s
}

// device returns the mock device i of s.
func device(t *testing.T, s *server.Server, i int) *server.Device {
	t.Helper()
	d, ok := s.Devices[i].(*server.Device)
	if !ok {
		t.Fatalf("mock device %d is %T, want *server.Device", i, s.Devices[i])
	}
	return d
}

// setState fills d's identity and overrides the mock's function fields so
// that d reports st.
func setState(d *server.Device, st fakeState) {
	d.UUID = fmt.Sprintf("GPU-00000000-0000-4000-8000-%012d", d.Index)
	d.MemoryInfo.Used = st.usedBytes
	d.MemoryInfo.Free = d.MemoryInfo.Total - st.usedBytes
	// The mock's GetPciInfo fills only the device id; add the bus id.
	d.GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) {
		p := nvml.PciInfo{PciDeviceId: d.Config.PciDeviceId, Bus: uint32(d.Index)}
		for j := range len(d.PciBusID) {
			p.BusId[j] = int8(d.PciBusID[j])
		}
		return p, nvml.SUCCESS
	}
	d.GetClockInfoFunc = func(c nvml.ClockType) (uint32, nvml.Return) {
		return clock(c, st.smMHz, st.memMHz)
	}
	d.GetMaxClockInfoFunc = func(c nvml.ClockType) (uint32, nvml.Return) {
		return clock(c, 1980, 3201)
	}
	d.GetMemoryBusWidthFunc = func() (uint32, nvml.Return) { return 6016, nvml.SUCCESS }
	d.GetTemperatureFunc = func(s nvml.TemperatureSensors) (uint32, nvml.Return) {
		if s != nvml.TEMPERATURE_GPU {
			return 0, nvml.ERROR_INVALID_ARGUMENT
		}
		return st.tempC, nvml.SUCCESS
	}
	d.GetPowerUsageFunc = func() (uint32, nvml.Return) { return st.powerMW, nvml.SUCCESS }
	d.GetEnforcedPowerLimitFunc = func() (uint32, nvml.Return) { return st.limitMW, nvml.SUCCESS }
	d.GetPerformanceStateFunc = func() (nvml.Pstates, nvml.Return) { return st.pstate, nvml.SUCCESS }
	d.GetCurrentClocksEventReasonsFunc = func() (uint64, nvml.Return) { return st.events, nvml.SUCCESS }
	d.GetCurrPcieLinkGenerationFunc = func() (int, nvml.Return) { return 5, nvml.SUCCESS }
	d.GetCurrPcieLinkWidthFunc = func() (int, nvml.Return) { return 16, nvml.SUCCESS }
}

func clock(c nvml.ClockType, sm, mem uint32) (uint32, nvml.Return) {
	switch c {
	case nvml.CLOCK_SM:
		return sm, nvml.SUCCESS
	case nvml.CLOCK_MEM:
		return mem, nvml.SUCCESS
	}
	return 0, nvml.ERROR_INVALID_ARGUMENT
}

// deadLibrary is an NVML whose Init fails the way the real library does on
// a machine without the driver. Any other call fails the test: the likely
// ones call t.Fatalf, and the rest hit the embedded moq mock, whose nil
// *Func fields panic naming the method.
type deadLibrary struct {
	*mock.Interface
	t     *testing.T
	ret   nvml.Return
	inits int
}

func newDeadLibrary(t *testing.T, ret nvml.Return) *deadLibrary {
	return &deadLibrary{Interface: &mock.Interface{}, t: t, ret: ret}
}

func (l *deadLibrary) Init() nvml.Return {
	l.inits++
	return l.ret
}

func (l *deadLibrary) called(name string) {
	l.t.Helper()
	l.t.Fatalf("%s called after Init failed with %d: on a real machine without the driver this kills the process", name, int32(l.ret))
}

func (l *deadLibrary) Shutdown() nvml.Return {
	l.called("Shutdown")
	return nvml.SUCCESS
}

func (l *deadLibrary) ErrorString(nvml.Return) string {
	l.called("ErrorString")
	return ""
}

func (l *deadLibrary) SystemGetDriverVersion() (string, nvml.Return) {
	l.called("SystemGetDriverVersion")
	return "", nvml.SUCCESS
}

func (l *deadLibrary) SystemGetCudaDriverVersion() (int, nvml.Return) {
	l.called("SystemGetCudaDriverVersion")
	return 0, nvml.SUCCESS
}

func (l *deadLibrary) DeviceGetCount() (int, nvml.Return) {
	l.called("DeviceGetCount")
	return 0, nvml.SUCCESS
}

func (l *deadLibrary) DeviceGetHandleByIndex(int) (nvml.Device, nvml.Return) {
	l.called("DeviceGetHandleByIndex")
	return nil, nvml.SUCCESS
}
