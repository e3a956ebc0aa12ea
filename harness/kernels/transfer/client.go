package transfer

import (
	"context"

	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/protocol"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// Name is the kind's name on the wire: its service's (kvharness.v1.Transfer,
// transfer.proto), what Describe lists and a variant's kernel says.
const Name protocol.Kernel = "transfer"

// Transfer runs the transfer kernel through the transfer service
// (transfer.proto) and returns the descriptors it built: its failures
// classified as every plugin call's are (plugin.Call).
func Transfer(ctx context.Context, p *plugin.Plugin, req *kvpb.TransferRequest) (*kvpb.TransferResponse, error) {
	return plugin.Call(ctx, p, "Transfer", kvpb.NewTransferClient(p.Conn()).Transfer, req)
}
