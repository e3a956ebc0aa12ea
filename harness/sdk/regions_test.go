package sdk_test

import (
	"bytes"
	"context"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
	fused "github.com/kvharness/kvharness/plugins/fusedstore/kernel"
)

// TestAttachSeveralRegions: an attach may carry several host regions; a
// pool in region 1 is stored into through region 1's mapping (at offsets
// that would overlap region 0's windows, which is no overlap), its inputs
// read from staging in region 0, and windows that name no region, or
// staging outside region 0, are refused.
func TestAttachSeveralRegions(t *testing.T) {
	pl := newPlan([]string{"bf16", "bf16"}, 128, 64, 64, 8)
	first, second := newHostArena(t, pl.size), newHostArena(t, pl.size)
	req := proto.Clone(pl.attach(first.desc(), "")).(*kvpb.AttachRequest)
	req.Regions = []*kvpb.Arena{first.desc(), second.desc()}
	req.Pools[1].GuardBefore.Region, req.Pools[1].Pool.Region, req.Pools[1].GuardAfter.Region = 1, 1, 1
	req.Pools[1].Pool.Offset = req.Pools[0].Pool.Offset // region 1's own bytes
	srv := serve(fused.Plugin)
	_, err := srv.Attach(context.Background(), req)
	must(t, err)

	c := storeCase{pool: 1, capacity: 1, n: 1, padding: kvpb.Padding_PADDING_NONE, rows: make([]uint16, 128), loc: []int64{3}}
	for i := range c.rows {
		c.rows[i] = 0x3f80 // 1.0
	}
	c.stage(first.mem, pl)
	before := bytes.Clone(first.mem)
	_, err = srv.StoreBatch(context.Background(), &kvpb.StoreBatchRequest{Calls: []*kvpb.StoreRequest{c.request(pl, false)}})
	must(t, err)
	slot := int(req.Pools[1].Pool.Offset) + 3*256
	if second.mem[slot] != 0x80 || second.mem[slot+1] != 0x3f {
		t.Errorf("region 1 slot 3 holds % x, want the row", second.mem[slot:slot+4])
	}
	if !bytes.Equal(before, first.mem) {
		t.Errorf("a store into region 1 changed region 0 at %d", oracle.FirstDiff(before, first.mem))
	}

	for name, edit := range map[string]func(*kvpb.AttachRequest){
		"pool in region 2":    func(r *kvpb.AttachRequest) { r.Pools[1].Pool.Region = 2 },
		"staging in region 1": func(r *kvpb.AttachRequest) { r.Staging.Region = 1 },
	} {
		bad := proto.Clone(req).(*kvpb.AttachRequest)
		edit(bad)
		_, err := srv.Attach(context.Background(), bad)
		t.Run(name, func(t *testing.T) { wantStatus(t, err, codes.InvalidArgument, "region") })
	}
}
