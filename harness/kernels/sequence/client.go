package sequence

import (
	"context"

	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/protocol"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// storeKind is the kind whose kernel a sequence's steps call: the store
// service (store.proto). The sequence kind has no service of its own and
// imports no other kind; it makes the store service's call itself.
var storeKind = protocol.Kernel("store")

// storeBatch runs a step's stores (a layer each) in one round trip on the
// plugin's store service, its failures classified as every plugin call's
// are (plugin.Call).
func storeBatch(ctx context.Context, p *plugin.Plugin, reqs []*kvpb.StoreRequest) error {
	_, err := plugin.Call(ctx, p, "StoreBatch", kvpb.NewStoreClient(p.Conn()).StoreBatch, &kvpb.StoreBatchRequest{Calls: reqs})
	return err
}
