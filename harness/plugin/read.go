package plugin

import (
	"context"

	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// Read runs the read kernel. Its failures are classified as Store's are: a
// crash, a hang, or an answer the plugin gave on purpose.
func (p *Plugin) Read(ctx context.Context, req *kvpb.ReadRequest) error {
	_, err := call(ctx, p, "Read", kvpb.NewReadClient(p.conn).Read, req)
	return err
}
