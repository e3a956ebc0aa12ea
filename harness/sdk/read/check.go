package read

import (
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kvharness/kvharness/harness/protocol/kvpb"
	"github.com/kvharness/kvharness/harness/sdk"
)

// readShape is what a checked read request holds.
type readShape struct {
	requests, k, tokens int
}

// int64Reader reads n int64s at a staging offset that inStaging accepted:
// a view of shared memory, or a copy out of device memory.
type int64Reader func(off uint64, n int) ([]int64, error)

// checkRead validates a read request against the attached arena, the same
// way for both backends. It reads the list bounds and the tokens, because
// the tokens window's size and every slot's range depend on them: a kernel
// must never be handed a slot outside its pool.
func (s *server) checkRead(req *kvpb.ReadRequest, ints int64Reader) (sdk.Pool, readShape, error) {
	if !s.Attached() {
		return sdk.Pool{}, readShape{}, status.Error(codes.FailedPrecondition, "read before attach")
	}
	if int(req.Pool) >= len(s.Pools()) {
		return sdk.Pool{}, readShape{}, sdk.BadRequest("pool %d: only %d attached", req.Pool, len(s.Pools()))
	}
	p := s.Pools()[req.Pool]
	sh := readShape{requests: int(req.Requests), k: int(req.K)}
	if uint64(req.Requests)*uint64(max(req.K, 1)) > uint64(s.Staging().Len) {
		return sdk.Pool{}, readShape{}, sdk.BadRequest("%d requests × k %d do not fit the %d-byte staging", req.Requests, req.K, s.Staging().Len)
	}
	if err := s.InStaging(req.QueriesOffset, sh.requests*p.Layout.HeadDim, 2); err != nil {
		return sdk.Pool{}, readShape{}, fmt.Errorf("queries: %w", err)
	}
	tokens, err := s.readTokens(req, p, ints)
	if err != nil {
		return sdk.Pool{}, readShape{}, err
	}
	sh.tokens = tokens
	if err := s.checkOutputs(req, sh); err != nil {
		return sdk.Pool{}, readShape{}, err
	}
	return p, sh, nil
}

// readTokens checks the list bounds and the tokens and returns how many
// tokens there are.
func (s *server) readTokens(req *kvpb.ReadRequest, p sdk.Pool, ints int64Reader) (int, error) {
	r := int(req.Requests)
	if err := s.InStaging(req.IndptrOffset, r+1, 8); err != nil {
		return 0, fmt.Errorf("indptr: %w", err)
	}
	indptr, err := ints(req.IndptrOffset, r+1)
	if err != nil {
		return 0, err
	}
	if err := checkIndptr(indptr, s.Staging().Len/8); err != nil {
		return 0, err
	}
	n := int(indptr[r])
	if err := s.InStaging(req.TokensOffset, n, 8); err != nil {
		return 0, fmt.Errorf("tokens: %w", err)
	}
	tokens, err := ints(req.TokensOffset, n)
	if err != nil {
		return 0, err
	}
	for i, t := range tokens {
		if t < 0 || t >= int64(p.Slots) {
			return 0, sdk.BadRequest("token %d is slot %d, outside pool %q's slots 0..%d", i, t, p.Name, p.Slots-1)
		}
	}
	return n, nil
}

// checkIndptr wants CSR bounds: starting at 0, never decreasing, and no
// more tokens than staging could hold.
func checkIndptr(indptr []int64, maxTokens int) error {
	if indptr[0] != 0 {
		return sdk.BadRequest("indptr[0] is %d; token lists start at 0", indptr[0])
	}
	for i := 1; i < len(indptr); i++ {
		if indptr[i] < indptr[i-1] {
			return sdk.BadRequest("indptr[%d] = %d is below indptr[%d] = %d; list bounds never decrease", i, indptr[i], i-1, indptr[i-1])
		}
	}
	if last := indptr[len(indptr)-1]; last > int64(maxTokens) {
		return sdk.BadRequest("indptr ends at %d tokens; staging holds at most %d", last, maxTokens)
	}
	return nil
}

// checkOutputs places the out windows in staging, apart from each other
// and from every input: a kernel may write them without clobbering what
// it reads.
func (s *server) checkOutputs(req *kvpb.ReadRequest, sh readShape) error {
	n := sh.requests * sh.k
	if err := s.InStaging(req.OutSlotsOffset, n, 8); err != nil {
		return fmt.Errorf("out slots: %w", err)
	}
	if err := s.InStaging(req.OutScoresOffset, n, 4); err != nil {
		return fmt.Errorf("out scores: %w", err)
	}
	d := s.Pools()[req.Pool].Layout.HeadDim
	slots := span{"out slots", req.OutSlotsOffset, uint64(8 * n)}
	scores := span{"out scores", req.OutScoresOffset, uint64(4 * n)}
	for _, in := range []span{
		{"queries", req.QueriesOffset, uint64(2 * sh.requests * d)},
		{"indptr", req.IndptrOffset, uint64(8 * (sh.requests + 1))},
		{"tokens", req.TokensOffset, uint64(8 * sh.tokens)},
		scores,
	} {
		for _, out := range []span{slots, scores} {
			if out.name != in.name && out.overlaps(in) {
				return sdk.BadRequest("%s [%d,%d) overlaps %s [%d,%d)", out.name, out.off, out.end(), in.name, in.off, in.end())
			}
		}
	}
	return nil
}

// span is a named staging range, for overlap checks.
type span struct {
	name     string
	off, len uint64
}

func (a span) end() uint64 { return a.off + a.len }

func (a span) overlaps(b span) bool {
	return a.len > 0 && b.len > 0 && a.off < b.end() && b.off < a.end()
}
