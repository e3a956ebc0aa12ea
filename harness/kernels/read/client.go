package read

import (
	"context"

	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/protocol"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// Name is the kind's name on the wire: its service's (kvharness.v1.Read,
// read.proto), what Describe lists and a variant's kernel says.
const Name protocol.Kernel = "read"

// Read runs the read kernel through the read service (read.proto): its
// failures classified as every plugin call's are (plugin.Call).
func Read(ctx context.Context, p *plugin.Plugin, req *kvpb.ReadRequest) error {
	_, err := plugin.Call(ctx, p, "Read", kvpb.NewReadClient(p.Conn()).Read, req)
	return err
}
