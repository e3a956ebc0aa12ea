package sdk_test

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvharness/kvharness/harness/protocol/kvpb"
	pdasync "github.com/kvharness/kvharness/plugins/pdasync/kernel"
)

// TestAsyncRefusals: a pdasync call out of place is refused with the code
// and words that say what to do, never served.
func TestAsyncRefusals(t *testing.T) {
	ctx := context.Background()
	async := serve(pdasync.Plugin)
	store := serve(bundled["fusedstore"])
	shm := &kvpb.Arena{Backend: kvpb.Backend_BACKEND_SHM, Path: "/nonexistent", Size: 4096}
	for _, tc := range []struct {
		name string
		call func() error
		code codes.Code
		says string
	}{
		{"no pdasync kernel", func() error {
			_, err := store.AsyncAttach(ctx, &kvpb.AsyncAttachRequest{Role: kvpb.AsyncRole_ASYNC_ROLE_DECODE, Attach: &kvpb.AttachRequest{Arena: shm}})
			return err
		}, codes.Unimplemented, "unknown service kvharness.v1.PDAsync"},
		{"no role", func() error {
			_, err := async.AsyncAttach(ctx, &kvpb.AsyncAttachRequest{Attach: &kvpb.AttachRequest{Arena: shm}})
			return err
		}, codes.InvalidArgument, "want ASYNC_ROLE_PREFILL or ASYNC_ROLE_DECODE"},
		{"prefill of one region", func() error {
			_, err := async.AsyncAttach(ctx, &kvpb.AsyncAttachRequest{Role: kvpb.AsyncRole_ASYNC_ROLE_PREFILL, Attach: &kvpb.AttachRequest{Arena: shm}})
			return err
		}, codes.InvalidArgument, "1 regions; want 2"},
		{"mixed backends", func() error {
			cuda := &kvpb.Arena{Backend: kvpb.Backend_BACKEND_CUDA, Size: 4096}
			_, err := async.AsyncAttach(ctx, &kvpb.AsyncAttachRequest{Role: kvpb.AsyncRole_ASYNC_ROLE_PREFILL,
				Attach: &kvpb.AttachRequest{Arena: shm, Regions: []*kvpb.Arena{shm, cuda}}})
			return err
		}, codes.InvalidArgument, "want one backend"},
		{"post before attach", func() error {
			_, err := async.AsyncPost(ctx, &kvpb.AsyncPostRequest{})
			return err
		}, codes.FailedPrecondition, "AsyncPost before AsyncAttach"},
		{"reset before attach", func() error {
			_, err := async.AsyncReset(ctx, &kvpb.AsyncResetRequest{})
			return err
		}, codes.FailedPrecondition, "AsyncReset before AsyncAttach"},
	} {
		err := tc.call()
		if status.Code(err) != tc.code || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v; want %v saying %q", tc.name, err, tc.code, tc.says)
		}
	}
}
