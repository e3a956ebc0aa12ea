package read

import (
	"fmt"
	"io"
	"strings"
)

// Bounds of a read case, so that a corrupt repro file is an error rather
// than a gigabyte of staging.
const (
	MaxReadRequests = 1 << 16
	MaxReadK        = 1 << 16
	MaxReadTokens   = 1 << 20
)

// Case is one read-kernel call: each request scores its query against the
// keys of its token list and wants the top K. Keys holds one vector per
// slot the lists name; the harness writes each into its slot with the
// reference encoder before the call. Different requests may share slots
// (a shared prefix); a list never names a slot twice.
type Case struct {
	K        int       `json:"k"`
	Keys     []Key     `json:"keys"`
	Requests []Request `json:"requests"`
}

// Key is the vector stored in a slot.
type Key struct {
	Slot int64 `json:"slot"`
	Vec
}

// Request is one request of a read: its query and its token list.
type Request struct {
	Query  Vec     `json:"query"`
	Tokens []int64 `json:"tokens"`
}

// TotalTokens is the length of all lists together.
func (r *Case) TotalTokens() int {
	n := 0
	for _, q := range r.Requests {
		n += len(q.Tokens)
	}
	return n
}

// KeyMap maps each slot to its vector.
func (r *Case) KeyMap() map[int64]Vec {
	m := make(map[int64]Vec, len(r.Keys))
	for _, k := range r.Keys {
		m[k.Slot] = k.Vec
	}
	return m
}

// Clone returns a deep copy.
func (r *Case) Clone() *Case {
	c := &Case{K: r.K, Keys: append([]Key(nil), r.Keys...), Requests: make([]Request, len(r.Requests))}
	for i, q := range r.Requests {
		c.Requests[i] = Request{Query: q.Query, Tokens: append([]int64(nil), q.Tokens...)}
	}
	return c
}

// String is a one-line summary, e.g. "R=2 k=4 lists=[[3 5] [9]] keys=3".
func (r *Case) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "R=%d k=%d lists=[", len(r.Requests), r.K)
	for i, q := range r.Requests {
		if i == 8 {
			fmt.Fprintf(&b, " …%d more", len(r.Requests)-i)
			break
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(readSlotList(q.Tokens, 8))
	}
	fmt.Fprintf(&b, "] keys=%d", len(r.Keys))
	return b.String()
}

func readSlotList(s []int64, limit int) string {
	if len(s) <= limit {
		return fmt.Sprint(s)
	}
	return fmt.Sprintf("%v…(%d more)", s[:limit], len(s)-limit)
}

// Describe implements Case: each request's query and list, then the keys,
// at most 8 of each.
func (r *Case) Describe(w io.Writer, indent string) {
	fmt.Fprintf(w, "%s%v\n", indent, r)
	const most = 8
	for i, q := range r.Requests[:min(len(r.Requests), most)] {
		fmt.Fprintf(w, "%s  request %-3d query %s seed %-20d tokens %s\n", indent, i, q.Query.Kind, q.Query.Seed, readSlotList(q.Tokens, 16))
	}
	if len(r.Requests) > most {
		fmt.Fprintf(w, "%s  … %d more requests in the repro file\n", indent, len(r.Requests)-most)
	}
	for _, k := range r.Keys[:min(len(r.Keys), most)] {
		fmt.Fprintf(w, "%s  key slot %-6d %s seed %d\n", indent, k.Slot, k.Kind, k.Seed)
	}
	if len(r.Keys) > most {
		fmt.Fprintf(w, "%s  … %d more keys in the repro file\n", indent, len(r.Keys)-most)
	}
}

// Validate implements Case. A case may hold ±Inf and NaN (VecNonFinite)
// in queries and keys; whether the plugin may be given them is Admits'.
func (r *Case) Validate(slots int) error {
	switch {
	case len(r.Requests) < 1 || len(r.Requests) > MaxReadRequests:
		return fmt.Errorf("%d requests: want 1..%d", len(r.Requests), MaxReadRequests)
	case r.K < 1 || r.K > MaxReadK:
		return fmt.Errorf("k %d: want 1..%d", r.K, MaxReadK)
	case r.TotalTokens() > MaxReadTokens:
		return fmt.Errorf("%d tokens: want at most %d", r.TotalTokens(), MaxReadTokens)
	}
	keys, err := r.checkKeys(slots)
	if err != nil {
		return err
	}
	used := make(map[int64]bool, len(keys))
	for i, q := range r.Requests {
		if err := checkReadList(i, q, keys, used); err != nil {
			return err
		}
	}
	for _, k := range r.Keys {
		if !used[k.Slot] {
			return fmt.Errorf("key for slot %d: no list names it", k.Slot)
		}
	}
	return nil
}

func (r *Case) checkKeys(slots int) (map[int64]Vec, error) {
	keys := make(map[int64]Vec, len(r.Keys))
	for _, k := range r.Keys {
		switch _, dup := keys[k.Slot]; {
		case k.Slot < 0 || k.Slot >= int64(slots):
			return nil, fmt.Errorf("key slot %d outside 0..%d", k.Slot, slots-1)
		case dup:
			return nil, fmt.Errorf("two keys for slot %d", k.Slot)
		case k.Kind >= numVecKinds:
			return nil, fmt.Errorf("key for slot %d: unknown kind %d", k.Slot, k.Kind)
		}
		keys[k.Slot] = k.Vec
	}
	return keys, nil
}

func checkReadList(i int, q Request, keys map[int64]Vec, used map[int64]bool) error {
	if q.Query.Kind == VecHuge || q.Query.Kind == VecMaxFinite || q.Query.Kind >= numVecKinds {
		return fmt.Errorf("request %d: query kind %s (queries are zero, normal, tiny, outlier, subnormal, signed-zero, boundary or non-finite)", i, q.Query.Kind)
	}
	seen := make(map[int64]bool, len(q.Tokens))
	for _, t := range q.Tokens {
		if seen[t] {
			return fmt.Errorf("request %d names slot %d twice", i, t)
		}
		k, ok := keys[t]
		if !ok {
			return fmt.Errorf("request %d: slot %d has no key", i, t)
		}
		if k.Kind == VecMaxFinite && !q.Query.Kind.ScoresMaxFinite() {
			return fmt.Errorf("request %d: query kind %s against slot %d's max-finite key would overflow float32 scores; "+
				"give the request a zero, tiny, subnormal or signed-zero query, or the key another kind", i, q.Query.Kind, t)
		}
		seen[t], used[t] = true, true
	}
	return nil
}
