package plugin

import (
	"context"
	"fmt"
	"time"

	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// The asynchronous transfer calls (kernel "pdasync"): a plugin process
// plays the prefill or the decode server of a pair (see kvharness.proto).
// Their failures are classified as Store's are.

// AsyncAttach maps a role's regions and pools. It is separate from Attach:
// a process attached for a role keeps that attachment until it is
// restarted or attached again.
func (p *Plugin) AsyncAttach(ctx context.Context, req *kvpb.AsyncAttachRequest) (*kvpb.AsyncAttachResponse, error) {
	resp, err := call(ctx, p, "AsyncAttach", kvpb.NewPDAsyncClient(p.conn).AsyncAttach, req)
	if err == nil && len(resp.Geometry) != len(req.GetAttach().GetPools()) {
		err = &Fault{Kind: Protocol, Plugin: p.Name, Call: "AsyncAttach",
			Detail: fmt.Sprintf("answered %d geometries for %d pools", len(resp.Geometry), len(req.GetAttach().GetPools()))}
	}
	return resp, err
}

// AsyncReset forgets every room: a new case begins.
func (p *Plugin) AsyncReset(ctx context.Context) error {
	_, err := call(ctx, p, "AsyncReset", kvpb.NewPDAsyncClient(p.conn).AsyncReset, &kvpb.AsyncResetRequest{})
	return err
}

// AsyncAdmit gives the decode a room and returns the destination pages it
// sends the prefill.
func (p *Plugin) AsyncAdmit(ctx context.Context, req *kvpb.AsyncAdmitRequest) (*kvpb.AsyncAdmitResponse, error) {
	return call(ctx, p, "AsyncAdmit", kvpb.NewPDAsyncClient(p.conn).AsyncAdmit, req)
}

// AsyncPost asks the prefill to post a room's handles; it answers their
// descriptors.
func (p *Plugin) AsyncPost(ctx context.Context, req *kvpb.AsyncPostRequest) (*kvpb.AsyncPostResponse, error) {
	return call(ctx, p, "AsyncPost", kvpb.NewPDAsyncClient(p.conn).AsyncPost, req)
}

// AsyncPoll collects the prefill's notifications since the last poll,
// waiting up to wait (at most a second) for a first one.
func (p *Plugin) AsyncPoll(ctx context.Context, wait time.Duration) (*kvpb.AsyncPollResponse, error) {
	us := uint32(min(wait, time.Second) / time.Microsecond)
	return call(ctx, p, "AsyncPoll", kvpb.NewPDAsyncClient(p.conn).AsyncPoll, &kvpb.AsyncPollRequest{WaitUs: us})
}

// AsyncNotify delivers notifications to the decode and returns what it
// did with its rooms.
func (p *Plugin) AsyncNotify(ctx context.Context, req *kvpb.AsyncNotifyRequest) (*kvpb.AsyncNotifyResponse, error) {
	return call(ctx, p, "AsyncNotify", kvpb.NewPDAsyncClient(p.conn).AsyncNotify, req)
}

// AsyncAbort aborts a room at the decode.
func (p *Plugin) AsyncAbort(ctx context.Context, req *kvpb.AsyncAbortRequest) (*kvpb.AsyncAbortResponse, error) {
	return call(ctx, p, "AsyncAbort", kvpb.NewPDAsyncClient(p.conn).AsyncAbort, req)
}

// Spawn starts another process of the same plugin, with the same options
// and trust: a kind that plays two servers (pdasync's prefill and decode)
// runs the second in it. The caller closes it. An in-process plugin has no
// process to start again.
func (p *Plugin) Spawn(ctx context.Context) (*Plugin, error) {
	if p.services != nil {
		return InProcessOf(p.Name, p.services), nil
	}
	if p.client == nil {
		return nil, fmt.Errorf("plugin %s runs in process: it cannot be started again; start a second in-process server instead", p.Name)
	}
	return start(ctx, p.spec, p.opts)
}
