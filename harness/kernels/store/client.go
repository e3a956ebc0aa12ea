package store

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/protocol"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// Name is the kind's name on the wire: its service's (kvharness.v1.Store,
// store.proto), what Describe lists and a variant's kernel says.
const Name protocol.Kernel = "store"

// The store service's calls (store.proto), on the plugin's connection:
// their failures classified as every plugin call's are (plugin.Call).

// StoreBatch runs several stores in one round trip and returns how long
// the plugin says its handler took (0 when it did not say: the trailer is
// optional).
func StoreBatch(ctx context.Context, p *plugin.Plugin, reqs []*kvpb.StoreRequest) (time.Duration, error) {
	var md metadata.MD
	_, err := plugin.Call(ctx, p, "StoreBatch", kvpb.NewStoreClient(p.Conn()).StoreBatch,
		&kvpb.StoreBatchRequest{Calls: reqs}, grpc.Trailer(&md))
	return handlerTime(md), err
}

// Store runs one store.
func Store(ctx context.Context, p *plugin.Plugin, req *kvpb.StoreRequest) error {
	_, err := plugin.Call(ctx, p, "Store", kvpb.NewStoreClient(p.Conn()).Store, req)
	return err
}

// sender sends a group's stores: in one round trip by the attach's
// doorbell when it has one, by StoreBatch otherwise, and one Store per
// call to a plugin that answers StoreBatch Unimplemented.
type sender struct {
	noBatch atomic.Bool      // the plugin answered Unimplemented to StoreBatch
	bell    *plugin.Doorbell // the attach's, when it has one
}

// send runs reqs and returns the plugin's handler time, when it said.
func (s *sender) send(ctx context.Context, p *plugin.Plugin, reqs []*kvpb.StoreRequest) (time.Duration, error) {
	if s.bell != nil {
		data, err := proto.Marshal(&kvpb.StoreBatchRequest{Calls: reqs})
		if err != nil {
			return 0, err
		}
		h, err := s.bell.Ring(ctx, "StoreBatch", data)
		if !errors.Is(err, plugin.ErrNoDoorbell) {
			return h, err
		}
	}
	if !s.noBatch.Load() {
		h, err := StoreBatch(ctx, p, reqs)
		f, ok := plugin.AsFault(err)
		if !ok || f.Code != codes.Unimplemented {
			return h, err
		}
		s.noBatch.Store(true)
	}
	for _, r := range reqs {
		if err := Store(ctx, p, r); err != nil {
			return 0, err
		}
	}
	return 0, nil
}

func handlerTime(md metadata.MD) time.Duration {
	v := md.Get(protocol.HandlerTimeKey)
	if len(v) != 1 {
		return 0
	}
	ns, err := strconv.ParseInt(v[0], 10, 64)
	if err != nil || ns < 0 {
		return 0
	}
	return time.Duration(ns)
}
