package measure

import (
	"errors"
	"fmt"
)

// ErrNoSamples is returned by Summarize for an empty sample set. The
// runner took no measurement; check that the cell ran at least once.
var ErrNoSamples = errors.New("no samples (the cell was never timed; check that the runner ran at least one launch)")

// ErrNonPositive is returned by the throughput helpers when the time or
// peak they divide by is zero or negative. A zero time usually means the
// timer is coarser than the kernel; time a batch of launches instead. A
// zero peak means the device's peak bandwidth was not looked up.
var ErrNonPositive = errors.New("divisor must be positive (a zero time means the timer is coarser than the kernel: use batched timing; a zero peak means it was not looked up)")

// A SampleError reports a sample that is not a duration: NaN, infinite or
// negative. Index is its position in the input.
type SampleError struct {
	Index int
	Value float64
}

func (e *SampleError) Error() string {
	return fmt.Sprintf("sample %d is %v, not a duration in ns (the runner produced a bad time; check its timer arithmetic)", e.Index, e.Value)
}
