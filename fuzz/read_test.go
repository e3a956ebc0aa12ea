package fuzz

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/kvharness/kvharness/harness/check"
	"github.com/kvharness/kvharness/harness/report"
	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/harness/workload"
)

// FuzzRead checks decoded read cases (workload.DecodeRead: every input is
// a valid case, none is skipped) against the plugin named by
// KVHARNESS_PLUGIN (default fusedstore, out of process; see package doc).
// Run it with:
//
//	go test -run='^$' -fuzz='^FuzzRead$' -fuzztime=30s ./fuzz
//
// The input's first byte picks the layout (bf16, fp8-paged, fp8-rows, or
// the next one the plugin reads); the rest is the case.
func FuzzRead(f *testing.F) {
	env, err := newReadEnv()
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(env.Close)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		tg, res, err := env.Check(context.Background(), data)
		if err != nil {
			if res != nil {
				t.Fatalf("case %v: %v", res.Case, err)
			}
			t.Fatal(err)
		}
		if res.Failed() {
			var b bytes.Buffer
			report.WriteReadResult(&b, res)
			t.Fatalf("%s %s: property %s violated\n%s", env.Plugin, tg.Layout.Name, res.Primary(), b.String())
		}
	})
}

// readLimits bound fuzzed read cases: a few requests of short lists, so a
// case costs a fraction of a millisecond.
var readLimits = workload.ReadLimits{Slots: Slots, PageSize: PageSize, MaxRequests: 4, MaxK: 16, MaxList: 32, MaxTokens: 64}

// readEnv is Env with read targets: the plugin, restarted after a fault,
// and one read target per layout it reads.
type readEnv struct {
	*Env
	reads []*check.ReadTarget
}

func newReadEnv() (*readEnv, error) {
	e, err := NewEnv()
	if err != nil {
		return nil, err
	}
	return &readEnv{Env: e}, nil
}

// Close stops the plugin and removes the run directory.
func (e *readEnv) Close() {
	e.reset()
	e.Env.Close()
}

func (e *readEnv) reset() {
	for _, t := range e.reads {
		if t != nil {
			t.Mem.Close()
		}
	}
	e.reads = nil
	e.Env.reset()
}

// target returns the read target of the layout pick chooses, or the next
// layout the plugin reads.
func (e *readEnv) target(ctx context.Context, pick byte) (*check.ReadTarget, error) {
	if e.p == nil {
		if err := e.start(ctx); err != nil {
			return nil, err
		}
		e.reads = make([]*check.ReadTarget, len(e.layouts))
	}
	for i := range len(e.layouts) {
		k := (int(pick) + i) % len(e.layouts)
		if e.reads[k] != nil {
			return e.reads[k], nil
		}
		t, err := check.OpenRead(ctx, e.p, e.dir, check.ReadConfig{Variant: e.Variant, Layout: e.layouts[k], Slots: Slots,
			MaxRequests: readLimits.MaxRequests, MaxTokens: readLimits.MaxTokens, MaxK: readLimits.MaxK, Seed: 1})
		if err == nil {
			e.reads[k] = t
			return t, nil
		}
		if !isUnsupported(err) {
			return nil, err
		}
	}
	return nil, fmt.Errorf("plugin %s reads none of %v", e.Plugin, layoutOrder)
}

// Check decodes one input and checks it. A plugin fault resets the
// environment so that the next input gets a fresh plugin.
func (e *readEnv) Check(ctx context.Context, data []byte) (*check.ReadTarget, *check.Result, error) {
	var pick byte
	if len(data) > 0 {
		pick, data = data[0], data[1:]
	}
	t, err := e.target(ctx, pick)
	if err != nil {
		e.reset()
		return nil, nil, err
	}
	c := workload.DecodeRead(data, readLimits)
	res, err := t.Check(ctx, c)
	if err != nil {
		e.reset()
		return t, &check.Result{Case: c}, err
	}
	return t, res, nil
}

// readSeed is a minimal read case for one bug class, kept in the corpus.
type readSeed struct {
	Name, Layout string
	Case         *workload.Read
	Why          string
}

// readCase builds a case whose slots get normal keys seeded by their slot,
// unless keys says otherwise; queries are normal.
func readCase(k int, keys map[int64]workload.Vec, lists ...[]int64) *workload.Read {
	c := &workload.Read{K: k}
	seen := map[int64]bool{}
	for i, l := range lists {
		c.Requests = append(c.Requests, workload.ReadRequest{Query: workload.Vec{Kind: workload.VecNormal, Seed: uint64(i + 1)}, Tokens: l})
		for _, s := range l {
			if !seen[s] {
				seen[s] = true
				v, ok := keys[s]
				if !ok {
					v = workload.Vec{Kind: workload.VecNormal, Seed: uint64(s % 256)}
				}
				c.Keys = append(c.Keys, workload.Key{Slot: s, Vec: v})
			}
		}
	}
	return c
}

func vec(kind workload.VecKind, seed uint64) workload.Vec {
	return workload.Vec{Kind: kind, Seed: seed}
}

func zeroQuery(c *workload.Read) *workload.Read {
	c.Requests[0].Query = vec(workload.VecZero, 0)
	return c
}

// readSeeds is FuzzRead's seed corpus: one minimal case per read bug
// class. The correct read kernels pass all of them; every read mutant
// fails at least one.
var readSeeds = []readSeed{
	{"tail-next-request", "bf16", readCase(4, nil, []int64{1, 2, 3}, []int64{40, 41}),
		"a list shorter than k followed by another request: an unmasked tail returns the next request's tokens"},
	{"scale-paged", "fp8-paged", readCase(1, nil, []int64{3}),
		"one fp8 key: a scale read interleaved from a packed page is a code of the next slot"},
	{"scale-rows", "fp8-rows", readCase(1, nil, []int64{3}),
		"one fp8 key: a scale read packed from a rows layout is another slot's code"},
	{"scratch-in-sink", "bf16", readCase(1, nil, []int64{5}),
		"one key away from slot 0: a kernel that keeps scratch in the 'unused' slot 0 changes the pool"},
	{"key-in-slot0", "fp8-rows", readCase(2, nil, []int64{0, 1}),
		"slot 0 holds a key: reserved-slot special cases"},
	{"empty-list", "bf16", readCase(2, nil, nil, []int64{7}),
		"an empty list: all padding, and its neighbour's bounds"},
	{"page-edge-short", "fp8-paged", readCase(8, nil, []int64{63, 64, 65}),
		"a list across a page edge, shorter than k: padding and the scale plane of the next page"},
	{"exact-tie", "bf16", readCase(1, map[int64]workload.Vec{9: vec(workload.VecNormal, 7), 4: vec(workload.VecNormal, 7)}, []int64{9, 4}),
		"the same key in two slots: the lower slot wins the tie"},
	{"zero-query", "fp8-paged", zeroQuery(readCase(2, nil, []int64{12, 10, 11})),
		"a zero query: every score is 0, the order is the slots'"},
	{"huge-and-zero-keys", "bf16", readCase(2, map[int64]workload.Vec{20: vec(workload.VecHuge, 1), 21: vec(workload.VecZero, 0)}, []int64{20, 21, 22}),
		"a huge key next to a zero key: range and sign"},
	{"last-slot", "fp8-rows", readCase(1, nil, []int64{Slots - 1}),
		"the pool's last slot"},
	{"shared-slot", "bf16", readCase(2, nil, []int64{7, 8}, []int64{8, 9}),
		"two requests share a slot (a shared prefix)"},
}

// Input encodes a seed as a fuzz input: the layout pick, then the case.
func (s readSeed) Input() []byte {
	pick := byte(slices.Index(layoutOrder, s.Layout))
	return append([]byte{pick}, workload.EncodeRead(s.Case, readLimits)...)
}

func readCorpusFile(s readSeed) string { return filepath.Join("testdata", "fuzz", "FuzzRead", s.Name) }

// TestReadSeedCorpus keeps testdata/fuzz/FuzzRead in step with readSeeds;
// run with -update after changing a seed.
func TestReadSeedCorpus(t *testing.T) {
	for _, s := range readSeeds {
		entry := fmt.Appendf(nil, "go test fuzz v1\n[]byte(%q)\n", s.Input())
		if *update {
			os.MkdirAll(filepath.Dir(readCorpusFile(s)), 0o755)
			if err := os.WriteFile(readCorpusFile(s), entry, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if got, err := os.ReadFile(readCorpusFile(s)); err != nil || !bytes.Equal(got, entry) {
			t.Errorf("%s: corpus file missing or stale (%v); run go test ./fuzz -run TestReadSeedCorpus -update", s.Name, err)
		}
		if err := s.Case.Validate(Slots); err != nil {
			t.Errorf("%s: %v", s.Name, err)
		}
		if diff := cmp.Diff(s.Case, workload.DecodeRead(s.Input()[1:], readLimits), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s does not decode to itself (-want +got):\n%s", s.Name, diff)
		}
	}
}

// TestReadSeedsKillEveryReadMutant replays the corpus in process against
// each bundled read kernel: the correct ones pass every seed, each read
// mutant fails at least one.
func TestReadSeedsKillEveryReadMutant(t *testing.T) {
	for name, p := range inProcess {
		if _, ok := p.Kernel.(sdk.Reader); !ok {
			continue
		}
		variants := []string{""}
		for _, v := range p.Variants {
			if sdk.IsReadVariant(v) {
				variants = append(variants, v.Name)
			}
		}
		for _, v := range variants {
			t.Setenv("KVHARNESS_PLUGIN", name)
			t.Setenv("KVHARNESS_VARIANT", v)
			t.Setenv("KVHARNESS_FUZZ_MODE", "in-process")
			killers := replayReadSeeds(t)
			if mutant := v != ""; (len(killers) > 0) != mutant {
				t.Errorf("%s variant %q: failed seeds %v; want some iff it is a mutant", name, v, killers)
			}
			t.Logf("%s %q: killed by %v", name, v, killers)
		}
	}
}

// replayReadSeeds returns the seeds that fail, with the property each
// violates.
func replayReadSeeds(t *testing.T) []string {
	env, err := newReadEnv()
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	var killers []string
	for _, s := range readSeeds {
		_, res, err := env.Check(context.Background(), s.Input())
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		if res.Failed() {
			killers = append(killers, fmt.Sprintf("%s (%s)", s.Name, res.Primary()))
		}
	}
	return killers
}
