package plugin

import (
	"context"

	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// Load runs one ordering case of the load kind. Its failures are
// classified as Store's are: a crash, a hang, or an answer the plugin gave
// on purpose.
func (p *Plugin) Load(ctx context.Context, req *kvpb.LoadRequest) (*kvpb.LoadResponse, error) {
	return call(ctx, p, "Load", kvpb.NewLoadClient(p.conn).Load, req)
}

// LoadBench times the plugin's load path against a plain copy of the same
// bytes. Its deadline is the per-call deadline: size the request to stay
// well inside it.
func (p *Plugin) LoadBench(ctx context.Context, req *kvpb.LoadBenchRequest) (*kvpb.LoadBenchResponse, error) {
	resp, err := call(ctx, p, "LoadBench", kvpb.NewLoadClient(p.conn).LoadBench, req)
	if err == nil && (len(resp.LoadNs) == 0 || len(resp.LoadNs) != len(resp.CopyNs)) {
		err = &Fault{Kind: Protocol, Plugin: p.Name, Call: "LoadBench", Detail: "answered no samples, or unpaired ones"}
	}
	return resp, err
}
