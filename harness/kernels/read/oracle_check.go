package read

import (
	"cmp"
	"math"
	"slices"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/pool"
)

// Oracle is everything the oracle knows about one read case on one
// pool: the keys the harness writes, their reference encoding and decoded
// values, and each request's reference ranking. Build it once per case.
type Oracle struct {
	Layout  *layout.Layout
	Region  pool.Region
	Seed    uint64
	Case    *Case
	Options Options // defaults filled in
	// Exact is true on a layout without quantized fields: the result must
	// be the reference's, near ties aside, rather than a Jaccard match.
	Exact bool

	keys    map[int64]*readKey
	queries [][]uint16
	refs    [][]RefToken // per request, in result order
	owner   map[int64]int
	// tainted marks the requests whose query, or a key their list names,
	// holds ±Inf or NaN as staged and stored (nonFinite).
	tainted []bool
}

// readKey is one slot's key: what the harness writes and what it means.
type readKey struct {
	records   [][]byte  // reference encoding, one record per plane
	value     []float64 // decoded
	id        int       // equal for keys with identical records
	nonFinite bool      // a decoded element is NaN or, in float32, ±Inf
}

// RefToken is a token of a request as the reference ranks it.
type RefToken struct {
	Slot  int64
	Score float64 // q·k in float64
	Tol   float64 // how far a correct float32 kernel may be from it
	// Zero is set when every product q_d·k_d is zero (a zero query or a
	// zero key): any kernel scores the token exactly 0.
	Zero bool
}

// NewOracle encodes the case's keys with the reference encoder and
// ranks every request's tokens.
func NewOracle(l *layout.Layout, r pool.Region, seed uint64, c *Case, opts Options) *Oracle {
	rc := &Oracle{Layout: l, Region: r, Seed: seed, Case: c, Options: opts.withDefaults(l.HeadDim),
		Exact: !Quantized(l), keys: make(map[int64]*readKey, len(c.Keys)), owner: map[int64]int{}}
	ids := map[string]int{}
	for _, k := range c.Keys {
		recs := l.Encode(k.KeyData(l))
		flat := string(slices.Concat(recs...))
		if _, ok := ids[flat]; !ok {
			ids[flat] = len(ids)
		}
		value := DecodeKey(l, recs)
		rc.keys[k.Slot] = &readKey{records: recs, value: value, id: ids[flat], nonFinite: slices.ContainsFunc(value, nonFinite)}
	}
	for i, q := range c.Requests {
		rc.queries = append(rc.queries, q.Query.Data(l.HeadDim))
		rc.refs = append(rc.refs, rc.rank(rc.queries[i], q.Tokens))
		rc.tainted = append(rc.tainted, slices.ContainsFunc(rc.queries[i], nonFiniteBF16) ||
			slices.ContainsFunc(q.Tokens, func(t int64) bool { return rc.keys[t].nonFinite }))
		for _, t := range q.Tokens {
			if _, ok := rc.owner[t]; !ok {
				rc.owner[t] = i
			}
		}
	}
	return rc
}

// rank scores a list against a query and sorts it in result order.
func (rc *Oracle) rank(query []uint16, tokens []int64) []RefToken {
	q := make([]float64, len(query))
	for i, e := range query {
		q[i] = float64(layout.BF16ToFloat32(e))
	}
	out := make([]RefToken, len(tokens))
	for i, t := range tokens {
		var dot, mag float64
		for d, k := range rc.keys[t].value {
			dot += q[d] * k
			mag += math.Abs(q[d] * k)
		}
		out[i] = RefToken{Slot: t, Score: dot, Tol: rc.Options.ScoreTol*mag + rc.Options.ScoreAbsTol, Zero: mag == 0}
	}
	slices.SortFunc(out, func(a, b RefToken) int { // higher first, a NaN score last, then the lower slot
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return cmp.Compare(a.Slot, b.Slot)
	})
	return out
}

// nonFinite reports whether a decoded key element is NaN or beyond
// float32's range, infinite in the kernel's arithmetic: a code 448 times
// a power-of-two scale of 2^127 (what an infinite element's group gets
// under the ue8m0 rule) is finite in float64, not in float32.
func nonFinite(x float64) bool { return !(math.Abs(x) <= math.MaxFloat32) }

// Contained reports whether request r is judged for form alone: the
// kernel declared the contained policy, and its query or a key its list
// names holds ±Inf or NaN.
func (rc *Oracle) Contained(r int) bool {
	return rc.Options.NonFinite == layout.Contained && rc.tainted[r]
}

// Queries returns each request's query as bf16 bit patterns, for staging.
func (rc *Oracle) Queries() [][]uint16 { return rc.queries }

// Reference returns request r's tokens in reference result order.
func (rc *Oracle) Reference(r int) []RefToken { return rc.refs[r] }

// KeyWrite is a key the harness writes before the call: its slot's
// footprint spans (from the pool base) and the record for each.
type KeyWrite struct {
	Slot    int64
	Spans   []layout.Span
	Records [][]byte
}

// Writes lists the harness's key writes, in the case's key order.
func (rc *Oracle) Writes() []KeyWrite {
	out := make([]KeyWrite, 0, len(rc.Case.Keys))
	for _, k := range rc.Case.Keys {
		out = append(out, KeyWrite{Slot: k.Slot, Spans: rc.Layout.Footprint(k.Slot), Records: rc.keys[k.Slot].records})
	}
	return out
}
