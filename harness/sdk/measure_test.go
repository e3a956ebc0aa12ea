package sdk

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// fakeOps counts calls and answers stop from a script: errRetake for the
// first retakes stops, then the sample's index in ns.
func fakeOps(retakes int, stops *int) benchOps {
	return benchOps{
		launch: func() error { return nil },
		flush:  func(int) error { return nil },
		start:  func() error { return nil },
		settle: func() error { return nil },
		stop: func() (time.Duration, error) {
			*stops++
			if *stops <= retakes {
				return 999, errRetake
			}
			return time.Duration(*stops), nil
		},
	}
}

// TestMeasureRetakes: a sample marked for retaking is taken again and left
// out; after maxRetakes the bench keeps what it gets rather than loop, and
// counts those samples.
func TestMeasureRetakes(t *testing.T) {
	req := &kvpb.BenchRequest{Iterations: 5, Mode: kvpb.BenchMode_BENCH_BATCHED, Batch: 3}
	for _, tc := range []struct {
		retakes, stops int
		first          float64
		paced          int
	}{
		{0, 5, 1, 0},
		{3, 8, 4, 0},
		{maxRetakes + 10, maxRetakes + 5, 999, 5}, // kept after the retakes ran out, and counted
	} {
		stops := 0
		ns, paced, err := measure(context.Background(), req, fakeOps(tc.retakes, &stops))
		if err != nil {
			t.Fatalf("%d retakes: %v", tc.retakes, err)
		}
		if len(ns) != 5 || stops != tc.stops || ns[0] != tc.first || paced != tc.paced {
			t.Errorf("%d retakes: %d samples from %d stops, first %v, %d host paced; want 5 from %d, first %v, %d",
				tc.retakes, len(ns), stops, ns[0], paced, tc.stops, tc.first, tc.paced)
		}
	}
	boom := errors.New("device lost")
	ops := fakeOps(0, new(int))
	ops.stop = func() (time.Duration, error) { return 0, boom }
	if _, _, err := measure(context.Background(), req, ops); !errors.Is(err, boom) {
		t.Errorf("measure passed on %v as %v", boom, err)
	}
}
