package telemetry

// PeakBandwidthGBps is the theoretical peak memory bandwidth in GB/s
// (10^9 bytes per second):
//
//	max memory clock (MHz) × 10^6 × bus width (bits) × 2 / 8 / 10^9
//
// The ×2 is for double data rate: NVML reports the memory clock, and HBM
// and GDDR move data on both clock edges. /8 turns bits into bytes. For the
// H200 (3201 MHz, 6016-bit) this is 4814.3 GB/s, the datasheet's 4.8 TB/s.
func PeakBandwidthGBps(maxMemClockMHz, busWidthBits uint32) float64 {
	return float64(maxMemClockMHz) * float64(busWidthBits) * 2 / 8 / 1000
}
