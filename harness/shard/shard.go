package shard

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// A Spec is part Index of Count, 1 ≤ Index ≤ Count. The zero Spec is the
// whole run (1/1).
type Spec struct{ Index, Count int }

// Whole is the run undivided.
var Whole = Spec{1, 1}

// maxCount bounds n: far above any real fleet, low enough that a typo such
// as 1/30000 is an error rather than 29,999 empty machines.
const maxCount = 4096

// Parse reads "i/n". An empty string is the whole run.
func Parse(s string) (Spec, error) {
	if s == "" {
		return Whole, nil
	}
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(strings.TrimSpace(a))
	n, err2 := strconv.Atoi(strings.TrimSpace(b))
	if !ok || err1 != nil || err2 != nil {
		return Spec{}, fmt.Errorf("shard %q: want i/n, such as 2/3 (part 2 of 3, counted from 1)", s)
	}
	sp := Spec{i, n}
	return sp, sp.Validate()
}

// Validate reports a Spec that names no part.
func (s Spec) Validate() error {
	if s == (Spec{}) {
		return nil
	}
	if s.Count < 1 || s.Count > maxCount || s.Index < 1 || s.Index > s.Count {
		return fmt.Errorf("shard %d/%d: want 1 ≤ i ≤ n ≤ %d (parts are counted from 1: the first of 3 is 1/3)", s.Index, s.Count, maxCount)
	}
	return nil
}

func (s Spec) norm() Spec {
	if s == (Spec{}) {
		return Whole
	}
	return s
}

// IsWhole reports whether s is the undivided run.
func (s Spec) IsWhole() bool { return s.norm().Count == 1 }

// String is "i/n".
func (s Spec) String() string {
	s = s.norm()
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}

// Owns reports whether item k (counted from 0) of a canonical order
// belongs to s.
func (s Spec) Owns(k int) bool {
	s = s.norm()
	return k >= 0 && k%s.Count == s.Index-1
}

// Select returns the items s owns, in canonical order: the items sorted by
// key, item k owned by part k mod n + 1. Two items with one key are an
// error, since either order of them would be canonical.
func Select[T any](s Spec, items []T, key func(T) string) ([]T, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	sorted, err := canonical(items, key)
	if err != nil {
		return nil, err
	}
	var out []T
	for k, it := range sorted {
		if s.Owns(k) {
			out = append(out, it)
		}
	}
	return out, nil
}

// Partition returns all n parts of items, part i at index i-1: what n
// machines running Select with 1/n … n/n take between them.
func Partition[T any](items []T, key func(T) string, n int) ([][]T, error) {
	if err := (Spec{1, n}).Validate(); err != nil {
		return nil, err
	}
	sorted, err := canonical(items, key)
	if err != nil {
		return nil, err
	}
	parts := make([][]T, n)
	for k, it := range sorted {
		parts[k%n] = append(parts[k%n], it)
	}
	return parts, nil
}

func canonical[T any](items []T, key func(T) string) ([]T, error) {
	sorted := slices.Clone(items)
	slices.SortStableFunc(sorted, func(a, b T) int { return cmp.Compare(key(a), key(b)) })
	for k := 1; k < len(sorted); k++ {
		if key(sorted[k]) == key(sorted[k-1]) {
			return nil, fmt.Errorf("two items share the shard key %q: each item needs a key of its own to have one owner", key(sorted[k]))
		}
	}
	return sorted, nil
}
