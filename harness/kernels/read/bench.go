package read

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
	"github.com/kvharness/kvharness/harness/results"
	"github.com/kvharness/kvharness/harness/rundir"
	"github.com/kvharness/kvharness/harness/target"
)

// Bench is how kvharness bench measures reads: one Read call of a query
// that scores the keys of the unit's tokens (distinct slots drawn from the
// whole pool) and keeps the top 64, beside a read of one token (the
// floor: the call's round trip). The plugin times nothing itself: each
// sample is the call as the harness sees it, its round trip included. A
// unit's tokens are the tokens its query reads.
var Bench = kind.Bench{
	Modes:   kind.EagerHotPerLaunch.Modes,
	Caches:  kind.EagerHotPerLaunch.Caches,
	Timings: kind.EagerHotPerLaunch.Timings,
	Empty:   true,
	Tokens: func(onGPU bool, _ int) []int {
		if onGPU {
			return []int{32, 512, 4096, 32768}
		}
		return []int{32, 512, 4096}
	},
	Validate: func(s kind.BenchSetup) error {
		for _, t := range s.Tokens {
			if t < 1 || t > min(s.Slots, MaxReadTokens) {
				return fmt.Errorf("tokens %d: a read's query reads 1 to %d distinct slots of the pool's %d (--slots)", t, min(s.Slots, MaxReadTokens), s.Slots)
			}
		}
		return kind.NoRotation(s, "a read")
	},
	Groups: kind.LayoutGroups,
	Open:   openBench,
	Bytes: func(g kind.BenchGroup, id results.Identity) int64 {
		if id.Kernel == results.KernelEmpty {
			return 0
		}
		return int64(id.Tokens*g.Layout.BytesPerToken() + g.Layout.RowBytes())
	},
}

// benchK is how many keys a bench read keeps: a sparse-attention
// indexer's top-k is of this order.
const benchK = 64

// benchTarget times a night's reads on one target. The keys of its
// largest unit are written once (every unit reads a prefix of its slots);
// a unit's inputs are staged when its cells take their turn.
type benchTarget struct {
	t      *Target
	seed   int64
	slots  []int64 // the largest unit's, in the order units take them
	staged int     // the tokens of the inputs staged now
	units  map[int]*stagedRead
}

// stagedRead is a unit's read: its inputs and its call.
type stagedRead struct {
	segs []target.Segment
	req  *kvpb.ReadRequest
}

func openBench(ctx context.Context, pl *plugin.Plugin, dir *rundir.Dir, g kind.BenchGroup, s kind.BenchSetup) (kind.BenchTarget, error) {
	n := max(s.MaxTokens(), 1)
	t, err := Open(ctx, pl, dir, Config{Variant: s.Variant, Layout: g.Layout, Slots: s.Slots, MaxRequests: 1,
		MaxTokens: n, MaxK: benchK, Seed: s.Seed, Backend: s.Backend})
	if err != nil {
		return nil, err
	}
	b := &benchTarget{t: t, seed: s.Seed, units: map[int]*stagedRead{}}
	for _, slot := range rand.New(rand.NewPCG(uint64(s.Seed), 0x7265616462656e63)).Perm(s.Slots)[:n] {
		b.slots = append(b.slots, int64(slot))
	}
	if err := t.prepare(NewOracle(t.Layout, t.Region(), uint64(s.Seed), b.read(n), Options{}), nil); err != nil {
		t.Close(ctx)
		return nil, err
	}
	return b, nil
}

// read is the case of a unit of tokens tokens: one query over the first
// tokens slots, each holding its key.
func (b *benchTarget) read(tokens int) *Case {
	c := &Case{K: min(benchK, tokens), Requests: []Request{{Query: Vec{Kind: VecNormal, Seed: 1}, Tokens: b.slots[:tokens]}}}
	for _, slot := range b.slots[:tokens] {
		c.Keys = append(c.Keys, Key{Slot: slot, Vec: Vec{Kind: VecNormal, Seed: uint64(slot)}})
	}
	return c
}

// stage writes the inputs of a read of tokens tokens, unless they are
// staged already.
func (b *benchTarget) stage(tokens int) (*kvpb.ReadRequest, error) {
	u, ok := b.units[tokens]
	if !ok {
		c := b.read(tokens)
		rc := NewOracle(b.t.Layout, b.t.Region(), uint64(b.seed), c, Options{})
		u = &stagedRead{segs: append(b.t.staging.inputs(rc), b.t.staging.outputs(c)...), req: b.t.staging.request(c)}
		b.units[tokens] = u
	}
	if b.staged != tokens {
		for _, sg := range u.segs {
			if err := b.t.Mem().WriteAt(sg.Data, sg.Off); err != nil {
				return nil, err
			}
		}
		b.staged = tokens
	}
	return u.req, nil
}

// Time implements kind.BenchTarget: per sample, one Read call timed by
// the harness.
func (b *benchTarget) Time(ctx context.Context, id results.Identity, c kind.Chunk) (kind.Timed, error) {
	if c.Batched {
		return kind.Timed{}, fmt.Errorf("read benches time each call: no batched timing")
	}
	if !b.t.Plugin.AttachedTo(b.t) {
		if err := b.t.Attach(ctx); err != nil {
			return kind.Timed{}, err
		}
	}
	tokens := id.Tokens
	if id.Kernel == results.KernelEmpty {
		tokens = 1
	}
	req, err := b.stage(tokens)
	if err != nil {
		return kind.Timed{}, err
	}
	for range c.Warmup {
		if err := Read(ctx, b.t.Plugin, req); err != nil {
			return kind.Timed{}, err
		}
	}
	out := kind.Timed{Device: "cpu"}
	if p := b.t.Backend.Place(); p.OnDevice() {
		out.Device = p.Device
	}
	for range c.Iterations {
		start := time.Now()
		if err := Read(ctx, b.t.Plugin, req); err != nil {
			return kind.Timed{}, err
		}
		out.Ns = append(out.Ns, float64(time.Since(start).Nanoseconds()))
	}
	return out, nil
}

// Close implements kind.BenchTarget.
func (b *benchTarget) Close(ctx context.Context) { b.t.Close(ctx) }
