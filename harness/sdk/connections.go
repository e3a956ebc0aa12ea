package sdk

import (
	"os"
	"strconv"
)

// deviceConnections is the number of hardware work queues the CUDA
// context of a plugin whose streams the SDK holds gets, unless the
// environment says otherwise. CUDA's default of 8 maps more streams than
// that onto shared queues, and a stream held by a wait
// (cuStreamWaitValue32 on a gate or a latch, as the pdasync device
// transport holds each handle and the load kind holds late copies) then
// blocks every stream behind it in its queue: a handle the harness
// opened, or the stream that releases the latch, would never run. 32 is
// the most CUDA allows.
const deviceConnections = "32"

// widenDeviceQueues sets CUDA_DEVICE_MAX_CONNECTIONS before any CUDA
// context exists, for a kernel of a kind whose streams the SDK holds
// (pdasync, load) and unless the user set it. Other kernels keep CUDA's 8:
// every queue is set up as the context is made, and on an H100 a context
// with 32 took 570–620 ms to make against 156–162 with 8 (2.1 s against
// 0.45–0.48 with three processes making theirs at once), which a store
// check pays in its plugin's process and again in the fresh one its
// failure is confirmed in.
func widenDeviceQueues(p Plugin) {
	if !holdsStreams(p) {
		return
	}
	if _, ok := os.LookupEnv("CUDA_DEVICE_MAX_CONNECTIONS"); !ok {
		os.Setenv("CUDA_DEVICE_MAX_CONNECTIONS", deviceConnections)
	}
}

// holdsStreams reports whether the plugin serves a kind whose streams the
// SDK holds behind waits.
func holdsStreams(p Plugin) bool {
	for _, k := range p.Kinds {
		if _, ok := k.(StreamHolder); ok {
			return true
		}
	}
	return false
}

// DeviceQueues is the number of hardware queues this process's CUDA
// contexts have: CUDA_DEVICE_MAX_CONNECTIONS, a number from 1 to 32; any
// other value counts as CUDA's default of 8, the fewest it could mean.
func DeviceQueues() int {
	n, err := strconv.Atoi(os.Getenv("CUDA_DEVICE_MAX_CONNECTIONS"))
	if err != nil || n < 1 || n > 32 {
		return 8
	}
	return n
}
