package plugin

import (
	"context"

	"google.golang.org/grpc"

	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// The asynchronous transfer calls of an in-process plugin.

func (d direct) AsyncAttach(ctx context.Context, in *kvpb.AsyncAttachRequest, _ ...grpc.CallOption) (*kvpb.AsyncAttachResponse, error) {
	return d.s.AsyncAttach(ctx, in)
}

func (d direct) AsyncReset(ctx context.Context, in *kvpb.AsyncResetRequest, _ ...grpc.CallOption) (*kvpb.AsyncResetResponse, error) {
	return d.s.AsyncReset(ctx, in)
}

func (d direct) AsyncAdmit(ctx context.Context, in *kvpb.AsyncAdmitRequest, _ ...grpc.CallOption) (*kvpb.AsyncAdmitResponse, error) {
	return d.s.AsyncAdmit(ctx, in)
}

func (d direct) AsyncPost(ctx context.Context, in *kvpb.AsyncPostRequest, _ ...grpc.CallOption) (*kvpb.AsyncPostResponse, error) {
	return d.s.AsyncPost(ctx, in)
}

func (d direct) AsyncPoll(ctx context.Context, in *kvpb.AsyncPollRequest, _ ...grpc.CallOption) (*kvpb.AsyncPollResponse, error) {
	return d.s.AsyncPoll(ctx, in)
}

func (d direct) AsyncNotify(ctx context.Context, in *kvpb.AsyncNotifyRequest, _ ...grpc.CallOption) (*kvpb.AsyncNotifyResponse, error) {
	return d.s.AsyncNotify(ctx, in)
}

func (d direct) AsyncAbort(ctx context.Context, in *kvpb.AsyncAbortRequest, _ ...grpc.CallOption) (*kvpb.AsyncAbortResponse, error) {
	return d.s.AsyncAbort(ctx, in)
}
