package kernel

import (
	"context"
	"errors"
	"fmt"

	"github.com/kvharness/kvharness/harness/sdk/load"
)

// load is what StartLoad leaves for the gates.
type loading struct {
	st     *state
	base   uint32           // counter: its value before this load
	failed map[[2]int]error // layer, buffer → the copy that failed
	asked  map[int]bool     // wait-before-record: layers whose event is recorded
}

// StartLoad implements load.LayerLoader.
func (k *kernel) StartLoad(_ context.Context, c *load.Call) error {
	st, err := k.state(c.Exec)
	if err != nil {
		return err
	}
	ld := &loading{st: st, failed: map[[2]int]error{}, asked: map[int]bool{}}
	c.State = ld
	if c.Variant == varStaged || c.Variant == mutRingReuse {
		return ld.staged(c)
	}
	// Attention may still read the pages this load overwrites.
	if c.Variant != mutOverwrite {
		if err := st.load.WaitStream(c.Prior); err != nil {
			return err
		}
	}
	ld.base = st.epoch
	for l := range c.Layers {
		ev, err := st.layerEvent(c.Exec, l)
		if err != nil {
			return err
		}
		if c.Variant == mutRecordEarly {
			if err := st.load.Record(ev); err != nil {
				return err
			}
		}
		if err := ld.copyLayer(c, st.load, l); err != nil {
			return err
		}
		if err := ld.done(c, l, ev); err != nil {
			return err
		}
	}
	return nil
}

// copyLayer queues layer l's pages of every buffer on s, noting the
// buffers whose copy failed.
func (ld *loading) copyLayer(c *load.Call, s *load.Stream, l int) error {
	for b, buf := range c.Buffers {
		for i := range c.Pages {
			err := s.Copy(dst(c, l, b, i), src(c, l, b, i), buf.PageBytes)
			switch {
			case errors.Is(err, load.ErrLoadFailed):
				ld.failed[[2]int{l, b}] = err
			case err != nil:
				return err
			}
		}
	}
	return nil
}

// done records that layer l is in, after its copies, as the variant does.
// The counter never goes back: the next load's values start where this
// one's last write left it.
func (ld *loading) done(c *load.Call, l int, ev *load.Event) error {
	st := ld.st
	switch c.Variant {
	case varCounter:
		st.epoch = ld.base + uint32(l) + 1
		return st.load.WriteValue(st.counter, st.epoch)
	case mutGlobalLayerID:
		st.epoch = ld.base + uint32(c.FirstLayer+l) + 1
		return st.load.WriteValue(st.counter, st.epoch)
	case mutRecordEarly, mutWaitFirst:
		return nil // recorded before the copies; or when the consumer first asks
	case mutRecordStream:
		return c.Prior.Record(ev)
	}
	return st.load.Record(ev)
}

// staged queues every page through the ring of staging slots: host →
// slot on the load stream, slot → page on the scatter stream, one event
// per layer on the scatter stream.
func (ld *loading) staged(c *load.Call) error {
	st := ld.st
	if err := st.ring(c); err != nil {
		return err
	}
	if err := st.scatter.WaitStream(c.Prior); err != nil { // the scatter writes the pages
		return err
	}
	n := 0
	for l := range c.Layers {
		for b, buf := range c.Buffers {
			for i := range c.Pages {
				if err := ld.bounce(c, n%ringSlots, l, b, i, buf.PageBytes); err != nil {
					return err
				}
				n++
			}
		}
		ev, err := st.layerEvent(c.Exec, l)
		if err != nil {
			return err
		}
		if err := st.scatter.Record(ev); err != nil {
			return err
		}
	}
	return nil
}

// bounce moves one page through slot s.
func (ld *loading) bounce(c *load.Call, s, l, b, i, n int) error {
	st := ld.st
	if st.used[s] && c.Variant != mutRingReuse {
		if err := st.load.Wait(st.out[s]); err != nil { // the slot's last scatter has read it
			return err
		}
	}
	err := st.load.Copy(st.slots[s], src(c, l, b, i), n)
	if errors.Is(err, load.ErrLoadFailed) {
		ld.failed[[2]int{l, b}] = err
		return nil
	}
	if err != nil {
		return err
	}
	for _, step := range []func() error{
		func() error { return st.load.Record(st.in[s]) },
		func() error { return st.scatter.Wait(st.in[s]) },
		func() error { return st.scatter.Copy(dst(c, l, b, i), st.slots[s], n) },
		func() error { return st.scatter.Record(st.out[s]) },
	} {
		if err := step(); err != nil {
			return err
		}
	}
	st.used[s] = true
	return nil
}

// ring checks that the call's pages fit the staging slots.
func (st *state) ring(c *load.Call) error {
	for _, b := range c.Buffers {
		if b.PageBytes > slotBytes {
			return fmt.Errorf("buffer %s: %d-byte pages do not fit the %d-byte staging slots", b.Name, b.PageBytes, slotBytes)
		}
	}
	return nil
}

// WaitLayer implements load.LayerLoader: the consumer's gate.
func (k *kernel) WaitLayer(_ context.Context, c *load.Call, layer, buffer int, s *load.Stream) error {
	ld := c.State.(*loading)
	st := ld.st
	if err := ld.failed[[2]int{layer, buffer}]; err != nil && c.Variant != mutFailedDone {
		return fmt.Errorf("layer %d %s: %w", layer, c.Buffers[buffer].Name, err)
	}
	switch c.Variant {
	case mutIndexKGate:
		if c.Buffers[buffer].Name == "indexk" {
			return nil
		}
	case mutPrevLayer:
		layer = max(layer-1, 0)
	case varCounter, mutGlobalLayerID:
		return s.WaitValue(st.counter, ld.base+uint32(layer)+1)
	}
	ev, err := st.layerEvent(c.Exec, layer)
	if err != nil {
		return err
	}
	if err := s.Wait(ev); err != nil {
		return err
	}
	if c.Variant == mutWaitFirst && !ld.asked[layer] {
		ld.asked[layer] = true
		return st.load.Record(ev)
	}
	return nil
}

// StorePages implements load.PageStorer: the layer's pages copied on the
// side stream, forked from the caller's stream and joined back to it.
func (k *kernel) StorePages(_ context.Context, c *load.PageStoreCall) error {
	st, err := k.state(c.Exec)
	if err != nil {
		return err
	}
	if c.Variant != mutStoreNoFork {
		if err := st.side.WaitStream(c.Caller); err != nil {
			return err
		}
	}
	for b, buf := range c.Buffers {
		for i := range c.Pages {
			to := at(c.Variant, c.DstPool(b), c.Pages[i].Dst, buf.PageBytes)
			if err := st.side.Copy(to, c.Src(b, i), buf.PageBytes); err != nil {
				return err
			}
		}
	}
	if c.Variant == mutStoreNoJoin {
		return nil
	}
	return c.Caller.WaitStream(st.side)
}

// src and dst are where page i of a layer's buffer is, as the loader
// computes it from its pools' starts, as engines do.
func src(c *load.Call, l, b, i int) load.Ref {
	return at(c.Variant, c.SrcPool(l, b), c.Pages[i].Src, c.Buffers[b].PageBytes)
}

func dst(c *load.Call, l, b, i int) load.Ref {
	return at(c.Variant, c.DstPool(l, b), c.Pages[i].Dst, c.Buffers[b].PageBytes)
}

// at is page p of n-byte pages of the pool at base: p × n bytes on,
// computed in 32 bits under offset-int32.
func at(variant string, base load.Ref, p, n int) load.Ref {
	if variant == mutOffsetInt32 {
		return base.Add(int(int32(p) * int32(n)))
	}
	return base.Add(p * n)
}
