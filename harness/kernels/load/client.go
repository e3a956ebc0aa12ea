package load

import (
	"context"

	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/protocol"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// Name is the kind's name on the wire: its service's (kvharness.v1.Load,
// load.proto), what Describe lists and a variant's kernel says.
const Name protocol.Kernel = "load"

// The load service's calls (load.proto), on the plugin's connection:
// their failures classified as every plugin call's are (plugin.Call).

// Load runs one ordering case.
func Load(ctx context.Context, p *plugin.Plugin, req *kvpb.LoadRequest) (*kvpb.LoadResponse, error) {
	return plugin.Call(ctx, p, "Load", kvpb.NewLoadClient(p.Conn()).Load, req)
}

// LoadBench times the plugin's load path against a plain copy of the same
// bytes. Its deadline is the per-call deadline: size the request to stay
// well inside it.
func LoadBench(ctx context.Context, p *plugin.Plugin, req *kvpb.LoadBenchRequest) (*kvpb.LoadBenchResponse, error) {
	resp, err := plugin.Call(ctx, p, "LoadBench", kvpb.NewLoadClient(p.Conn()).LoadBench, req)
	if err == nil && (len(resp.LoadNs) == 0 || len(resp.LoadNs) != len(resp.CopyNs)) {
		err = &plugin.Fault{Kind: plugin.Protocol, Plugin: p.Name, Call: "LoadBench", Detail: "answered no samples, or unpaired ones"}
	}
	return resp, err
}
