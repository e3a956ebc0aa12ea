package benchrun

import (
	"context"
	"testing"
	"time"

	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/results"
)

// slowLaunches is a bench target whose launches each take a millisecond
// of wall time and time themselves at ten microseconds: a launch whose
// timed part is a small share of its cost.
type slowLaunches struct{ launches int }

func (s *slowLaunches) Time(_ context.Context, _ results.Identity, c kind.Chunk) (kind.Timed, error) {
	n := c.Warmup + c.Iterations
	s.launches += n
	time.Sleep(time.Duration(n) * time.Millisecond)
	out := kind.Timed{Device: "cpu"}
	for range c.Iterations {
		out.Ns = append(out.Ns, float64(10*time.Microsecond))
	}
	return out, nil
}

func (s *slowLaunches) Close(context.Context) {}

// TestWarmStopsOnTheClock: the warm-up of a launch whose timed part
// understates its cost ends about warmTime after it began, not after the
// ten thousand launches the timed part says fill warmTime (ten seconds
// of them here); a launch timed as it costs still runs that count.
func TestWarmStopsOnTheClock(t *testing.T) {
	slow := &slowLaunches{}
	if err := warm(context.Background(), slow, results.Identity{}); err != nil {
		t.Fatal(err)
	}
	// At most: a millisecond a launch fills warmTime with want of them. No
	// floor beyond one launch: a loaded machine's sleeps overrun, and fewer
	// launches fill the clock (21 were seen with the 2 cores shared).
	want := int(warmTime / time.Millisecond)
	if slow.launches < 1 || slow.launches > 4*want {
		t.Errorf("the warm-up ran %d launches of a millisecond; want about %d (warmTime), not the 10,000 the timed part says", slow.launches, want)
	}
	fast := &countLaunches{ns: float64(warmTime) / 50}
	if err := warm(context.Background(), fast, results.Identity{}); err != nil {
		t.Fatal(err)
	}
	if fast.launches < 50 {
		t.Errorf("a launch timed as it costs: %d launches warmed; want the 50 its time says fill warmTime", fast.launches)
	}
}

// countLaunches times every launch at ns and takes no time.
type countLaunches struct {
	ns       float64
	launches int
}

func (c *countLaunches) Time(_ context.Context, _ results.Identity, ch kind.Chunk) (kind.Timed, error) {
	c.launches += ch.Warmup + ch.Iterations
	out := kind.Timed{Device: "cpu"}
	for range ch.Iterations {
		out.Ns = append(out.Ns, c.ns)
	}
	return out, nil
}

func (c *countLaunches) Close(context.Context) {}
