package plugin

import (
	"context"
	"errors"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/kvharness/kvharness/harness/protocol/doorbell"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// Doorbell is StoreBatch through a doorbell in the arena (package
// doorbell) instead of a gRPC call: the same calls, the same answers and
// the same faults, at a fraction of the CPU a call costs. A Doorbell
// belongs to one attach; once a call on it is abandoned (cancelled, hung,
// or the process died) it sends by gRPC, which waits for the plugin's
// lock, until the next attach opens another.
type Doorbell struct {
	p      *Plugin
	box    *doorbell.Box
	broken bool
}

// poll is how often a waiting call looks whether the plugin still runs.
const poll = 5 * time.Millisecond

// OpenDoorbell is the doorbell in box of the plugin's current attach,
// which asked for it; nil (so gRPC) when the plugin does not run in its
// own process, where a call is no round trip.
func (p *Plugin) OpenDoorbell(box *doorbell.Box) *Doorbell {
	if p.runner == nil || box == nil {
		return nil
	}
	return &Doorbell{p: p, box: box}
}

// StoreBatch is Plugin.StoreBatch through the doorbell. A broken
// Doorbell, or a request too large for the window, goes by gRPC.
func (d *Doorbell) StoreBatch(ctx context.Context, reqs []*kvpb.StoreRequest) error {
	if d.broken {
		return d.p.StoreBatch(ctx, reqs)
	}
	data, err := proto.Marshal(&kvpb.StoreBatchRequest{Calls: reqs})
	if err != nil {
		return err
	}
	seq, err := d.box.Post(data)
	if errors.Is(err, doorbell.ErrTooLarge) {
		return d.p.StoreBatch(ctx, reqs)
	}
	return d.answer(ctx, seq)
}

// answer waits for the answer to seq and turns it into what the RPC would
// have returned, faults classified as Plugin.call classifies them.
func (d *Doorbell) answer(ctx context.Context, seq uint32) error {
	p := d.p
	deadline := time.Now().Add(p.opts.CallTimeout)
	for !d.box.Wait(seq, min(poll, time.Until(deadline))) {
		select {
		case <-p.runner.exited:
			d.broken = true
			return p.classify(ctx, "StoreBatch", status.Error(codes.Unavailable, "the plugin process exited during the call"))
		default:
		}
		if err := ctx.Err(); err != nil {
			d.broken = true // the plugin may still be running it
			return err
		}
		if time.Now().After(deadline) {
			d.broken = true
			expired, cancel := context.WithDeadline(ctx, deadline)
			defer cancel()
			<-expired.Done()
			return p.classify(expired, "StoreBatch", status.Error(codes.DeadlineExceeded, "no answer on the doorbell"))
		}
	}
	code, msg, handler := d.box.Answer()
	p.handler = handler
	if c := codes.Code(code); c != codes.OK {
		return p.classify(ctx, "StoreBatch", status.Error(c, msg))
	}
	return nil
}
