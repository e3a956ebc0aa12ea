package shard

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for in, want := range map[string]Spec{"": Whole, "1/1": {1, 1}, "2/3": {2, 3}, " 3 / 3 ": {3, 3}} {
		got, err := Parse(in)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"0/3", "4/3", "1/0", "3", "a/b", "-1/2", "1/5000", "1/2/3"} {
		if _, err := Parse(in); err == nil || !strings.Contains(err.Error(), "shard") {
			t.Errorf("Parse(%q): %v; want an error naming the shard", in, err)
		}
	}
	if s := (Spec{}); s.String() != "1/1" || !s.IsWhole() || !s.Owns(7) {
		t.Errorf("the zero Spec is %s, whole %v, owns 7 %v; want the whole run", s, s.IsWhole(), s.Owns(7))
	}
}

// TestPartsCoverOnce: every item has exactly one owner among 1/n … n/n,
// the parts differ in size by at most one, and the union is the input.
func TestPartsCoverOnce(t *testing.T) {
	items := make([]string, 100)
	for i := range items {
		items[i] = fmt.Sprintf("item-%03d", i)
	}
	for n := 1; n <= 13; n++ {
		var union []string
		sizes := map[int]bool{}
		for i := 1; i <= n; i++ {
			part, err := Select(Spec{i, n}, items, func(s string) string { return s })
			if err != nil {
				t.Fatal(err)
			}
			sizes[len(part)] = true
			union = append(union, part...)
		}
		slices.Sort(union)
		if !slices.Equal(union, items) {
			t.Errorf("n=%d: the parts' union differs from the items (%d of %d)", n, len(union), len(items))
		}
		if len(sizes) > 2 {
			t.Errorf("n=%d: part sizes %v differ by more than one", n, sizes)
		}
	}
}

// TestOrderIndependent: two machines listing the same items in other
// orders take the same parts.
func TestOrderIndependent(t *testing.T) {
	items := []string{"fusedstore/bf16/1", "fusedstore/bf16/32", "bf16scatter/bf16/1", "fusedstore/fp8-paged/1", "bf16scatter/bf16/32"}
	shuffled := slices.Clone(items)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	id := func(s string) string { return s }
	for i := 1; i <= 3; i++ {
		a, _ := Select(Spec{i, 3}, items, id)
		b, _ := Select(Spec{i, 3}, shuffled, id)
		if !slices.Equal(a, b) {
			t.Errorf("part %d/3: %v from one order, %v from another", i, a, b)
		}
	}
	parts, err := Partition(shuffled, id, 3)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range parts {
		if s, _ := Select(Spec{i + 1, 3}, items, id); !slices.Equal(p, s) {
			t.Errorf("Partition part %d = %v, Select gives %v", i+1, p, s)
		}
	}
}

func TestDuplicateKeysRefused(t *testing.T) {
	_, err := Select(Spec{1, 2}, []string{"a", "b", "a"}, func(s string) string { return s })
	if err == nil || !strings.Contains(err.Error(), `"a"`) {
		t.Errorf("duplicate keys: %v; want an error naming the key", err)
	}
	if _, err := Partition([]int{1}, func(int) string { return "x" }, 0); err == nil {
		t.Error("Partition into 0 parts succeeded")
	}
}

// TestOwnsSeeds: numbered work (fuzz seeds) splits as Select does.
func TestOwnsSeeds(t *testing.T) {
	owners := make([]int, 10)
	for i := 1; i <= 4; i++ {
		for k := range owners {
			if (Spec{i, 4}).Owns(k) {
				owners[k] += i * 100
			}
		}
	}
	if want := []int{100, 200, 300, 400, 100, 200, 300, 400, 100, 200}; !slices.Equal(owners, want) {
		t.Errorf("owners of seeds 0..9 over 4 parts: %v, want %v", owners, want)
	}
	if (Spec{1, 2}).Owns(-1) {
		t.Error("a negative position is owned")
	}
}
