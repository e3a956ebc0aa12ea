package pdasync

import (
	"context"
	"fmt"
	"time"

	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// The pdasync service's calls (pdasync.proto): a plugin process plays the
// prefill or the decode server of a pair. Their failures are classified
// as every plugin call's are (plugin.Call).

func async(p *plugin.Plugin) kvpb.PDAsyncClient { return kvpb.NewPDAsyncClient(p.Conn()) }

// asyncAttach maps a role's regions and pools. It is separate from
// Attach: a process attached for a role keeps that attachment until it
// is restarted or attached again.
func asyncAttach(ctx context.Context, p *plugin.Plugin, req *kvpb.AsyncAttachRequest) (*kvpb.AsyncAttachResponse, error) {
	resp, err := plugin.Call(ctx, p, "AsyncAttach", async(p).AsyncAttach, req)
	if err == nil && len(resp.Geometry) != len(req.GetAttach().GetPools()) {
		err = &plugin.Fault{Kind: plugin.Protocol, Plugin: p.Name, Call: "AsyncAttach",
			Detail: fmt.Sprintf("answered %d geometries for %d pools", len(resp.Geometry), len(req.GetAttach().GetPools()))}
	}
	return resp, err
}

// asyncReset forgets every room: a new case begins.
func asyncReset(ctx context.Context, p *plugin.Plugin) error {
	_, err := plugin.Call(ctx, p, "AsyncReset", async(p).AsyncReset, &kvpb.AsyncResetRequest{})
	return err
}

// asyncAdmit gives the decode a room and returns the destination pages it
// sends the prefill.
func asyncAdmit(ctx context.Context, p *plugin.Plugin, req *kvpb.AsyncAdmitRequest) (*kvpb.AsyncAdmitResponse, error) {
	return plugin.Call(ctx, p, "AsyncAdmit", async(p).AsyncAdmit, req)
}

// asyncPost asks the prefill to post a room's handles; it answers their
// descriptors.
func asyncPost(ctx context.Context, p *plugin.Plugin, req *kvpb.AsyncPostRequest) (*kvpb.AsyncPostResponse, error) {
	return plugin.Call(ctx, p, "AsyncPost", async(p).AsyncPost, req)
}

// asyncPoll collects the prefill's notifications since the last poll,
// waiting up to wait (at most a second) for a first one.
func asyncPoll(ctx context.Context, p *plugin.Plugin, wait time.Duration) (*kvpb.AsyncPollResponse, error) {
	us := uint32(min(wait, time.Second) / time.Microsecond)
	return plugin.Call(ctx, p, "AsyncPoll", async(p).AsyncPoll, &kvpb.AsyncPollRequest{WaitUs: us})
}

// asyncNotify delivers notifications to the decode and returns what it
// did with its rooms.
func asyncNotify(ctx context.Context, p *plugin.Plugin, req *kvpb.AsyncNotifyRequest) (*kvpb.AsyncNotifyResponse, error) {
	return plugin.Call(ctx, p, "AsyncNotify", async(p).AsyncNotify, req)
}

// asyncAbort aborts a room at the decode.
func asyncAbort(ctx context.Context, p *plugin.Plugin, req *kvpb.AsyncAbortRequest) (*kvpb.AsyncAbortResponse, error) {
	return plugin.Call(ctx, p, "AsyncAbort", async(p).AsyncAbort, req)
}
