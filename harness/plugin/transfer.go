package plugin

import (
	"context"

	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// Transfer runs the transfer kernel and returns the descriptors it built.
// Its failures are classified as Store's are: a crash, a hang, or an answer
// the plugin gave on purpose.
func (p *Plugin) Transfer(ctx context.Context, req *kvpb.TransferRequest) (*kvpb.TransferResponse, error) {
	return call(ctx, p, "Transfer", kvpb.NewTransferClient(p.conn).Transfer, req)
}
