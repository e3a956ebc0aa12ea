package plugin

import (
	"context"
	"errors"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvharness/kvharness/harness/protocol/doorbell"
)

// Doorbell is a call through a doorbell in the arena (package doorbell)
// instead of gRPC: the same request bytes, the same answers and the same
// faults, at a fraction of the CPU a call costs. A Doorbell belongs to one
// attach; once a call on it is abandoned (cancelled, hung, or the process
// died) it answers ErrNoDoorbell, and the kind sends by gRPC, which waits
// for the plugin's lock, until the next attach opens another.
type Doorbell struct {
	p      *Plugin
	box    *doorbell.Box
	broken bool
}

// ErrNoDoorbell says a call cannot go through the doorbell (it is broken,
// or the request is too large for its window): send it by gRPC.
var ErrNoDoorbell = errors.New("no doorbell for this call")

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

// Ring posts one request (its serialized bytes) as the RPC named call
// would send it, waits for the answer and returns the plugin's handler
// time; faults are classified as Call classifies them.
func (d *Doorbell) Ring(ctx context.Context, call string, data []byte) (time.Duration, error) {
	if d.broken {
		return 0, ErrNoDoorbell
	}
	seq, err := d.box.Post(data)
	if errors.Is(err, doorbell.ErrTooLarge) {
		return 0, ErrNoDoorbell
	}
	return d.answer(ctx, call, seq)
}

// answer waits for the answer to seq and turns it into what the RPC would
// have returned, faults classified as Call classifies them.
func (d *Doorbell) answer(ctx context.Context, call string, seq uint32) (time.Duration, error) {
	p := d.p
	deadline := time.Now().Add(p.opts.CallTimeout)
	for !d.box.Wait(seq, min(poll, time.Until(deadline))) {
		select {
		case <-p.runner.exited:
			d.broken = true
			return 0, p.classify(ctx, call, p.opts.CallTimeout, status.Error(codes.Unavailable, "the plugin process exited during the call"))
		default:
		}
		if err := ctx.Err(); err != nil {
			d.broken = true // the plugin may still be running it
			return 0, err
		}
		if time.Now().After(deadline) {
			d.broken = true
			expired, cancel := context.WithDeadline(ctx, deadline)
			defer cancel()
			<-expired.Done()
			return 0, p.classify(expired, call, p.opts.CallTimeout, status.Error(codes.DeadlineExceeded, "no answer on the doorbell"))
		}
	}
	code, msg, handler := d.box.Answer()
	if c := codes.Code(code); c != codes.OK {
		return handler, p.classify(ctx, call, p.opts.CallTimeout, status.Error(c, msg))
	}
	return handler, nil
}
