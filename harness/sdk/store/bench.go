package store

import (
	"context"

	"github.com/kvharness/kvharness/harness/cuda"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// bencher is what Bench launches for stores (sdk.Bencher): the kernel's
// store, or on CUDA its graph replay, on the calls the request names.
type bencher struct{ s *server }

func (b bencher) HostLaunches(ctx context.Context, stores []*kvpb.StoreRequest) ([]func() error, error) {
	s := b.s
	k, ok := s.Kernel().(Storer)
	if !ok {
		return nil, noHostStore(s.Name())
	}
	var launches []func() error
	for _, st := range stores {
		call, err := s.storeCall(st)
		if err != nil {
			return nil, err
		}
		launches = append(launches, func() error { return k.Store(ctx, call) })
	}
	return launches, nil
}

func (b bencher) DeviceLaunches(ctx context.Context, c *cuda.Ctx, stores []*kvpb.StoreRequest) ([]func() error, error) {
	s := b.s
	k, ok := s.Kernel().(DeviceStorer)
	if !ok {
		return nil, noDeviceStore(s.Name())
	}
	var launches []func() error
	valid := map[uint32]bool{} // pools whose valid count is set: every store has the same (a rotation's rule)
	for _, st := range stores {
		call, err := s.deviceCall(st)
		if err != nil {
			return nil, err
		}
		if !valid[st.Pool] {
			if err := s.Device().SetValid(c, int(st.Pool), call.N); err != nil {
				return nil, err
			}
			valid[st.Pool] = true
		}
		launch, err := s.deviceLaunch(ctx, c, k, st, call)
		if err != nil {
			return nil, err
		}
		launches = append(launches, launch)
	}
	return launches, nil
}
