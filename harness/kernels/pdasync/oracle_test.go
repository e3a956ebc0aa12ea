package pdasync

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/internal/plugintest"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/pd"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/sdk"
	sdkpdasync "github.com/kvharness/kvharness/harness/sdk/pdasync"
	"github.com/kvharness/kvharness/plugins/pdasync/kernel"
)

// planted is the pdasync engine with one fault planted around it, for the
// oracle's own tests: each fault must be caught, by the check made for it.
type planted struct {
	fault string
	inner sdkpdasync.Kernel
}

func (k planted) NewPrefill(ctx context.Context, a *sdkpdasync.PrefillAttach) (sdkpdasync.Prefill, error) {
	p, err := k.inner.NewPrefill(ctx, a)
	return &plantedPrefill{Prefill: p, a: a, fault: k.fault}, err
}

func (k planted) NewDecode(ctx context.Context, a *sdkpdasync.DecodeAttach) (sdkpdasync.Decode, error) {
	d, err := k.inner.NewDecode(ctx, a)
	return &plantedDecode{Decode: d, fault: k.fault}, err
}

type plantedPrefill struct {
	sdkpdasync.Prefill
	a      *sdkpdasync.PrefillAttach
	fault  string
	posted []sdkpdasync.Room
	stray  *sdkpdasync.Xfer          // stray-copy's extra copy
	held   []sdkpdasync.Notification // notes held until it lands
}

func (p *plantedPrefill) Post(ctx context.Context, room sdkpdasync.Room, src, dst []int64) ([]sdkpdasync.Posted, error) {
	out, err := p.Prefill.Post(ctx, room, src, dst)
	p.posted = append(p.posted, room)
	switch p.fault {
	case "wrong-item-len":
		out[0].Descriptors[0].ItemLen++
	case "stray-copy": // one more page, behind the first room's first handle's gate, onto the decode pool's last page
		if p.stray != nil {
			break
		}
		b := p.a.Buffers[0]
		n := out[0].Descriptors[0].ItemLen
		stray := sdk.Descriptor{Room: room.ID, Src: b.Src.Base, Dst: b.Dst.Base + (b.Pages()-1)*n, Length: n, ItemLen: n, Run: 1}
		p.stray, err = p.a.Post(out[0].Handle, []sdk.Descriptor{stray})
	}
	return out, err
}

func (p *plantedPrefill) Poll(ctx context.Context) ([]sdkpdasync.Notification, error) {
	ns, err := p.Prefill.Poll(ctx)
	switch p.fault {
	case "stray-copy": // nothing is told before the stray copy landed: a busy machine must not let the check end first
		ns, p.held = append(p.held, ns...), nil
		if p.stray == nil {
			break
		}
		if st, serr := p.stray.State(); serr == nil && st == sdkpdasync.XferPending {
			p.held = ns
			return nil, err
		}
	case "hang":
		return nil, err
	case "done-twice":
		ns = append(ns, ns...)
	case "component-early":
		for _, r := range p.posted {
			for _, c := range r.Components {
				ns = append(ns, sdkpdasync.Notification{Room: r.ID, Component: c.ID, Note: sdkpdasync.NoteComponentDone})
			}
		}
		p.posted = nil
	}
	return ns, err
}

type plantedDecode struct {
	sdkpdasync.Decode
	fault string
}

func (d *plantedDecode) Admit(ctx context.Context, room sdkpdasync.Room, virt, table []int64) ([]int64, error) {
	dst, err := d.Decode.Admit(ctx, room, virt, table)
	if d.fault == "short-admit" {
		dst = dst[:len(dst)-1]
	}
	return dst, err
}

func (d *plantedDecode) Notify(ctx context.Context, ns []sdkpdasync.Notification) ([]sdkpdasync.Event, error) {
	evs, err := d.Decode.Notify(ctx, ns)
	return d.events(evs), err
}

func (d *plantedDecode) Abort(ctx context.Context, room uint64) ([]sdkpdasync.Event, error) {
	evs, err := d.Decode.Abort(ctx, room)
	if d.fault == "ready-aborted" {
		evs = append(evs, sdkpdasync.Event{Room: room, Kind: sdkpdasync.Ready, Digests: make([][]byte, 3)})
	}
	return d.events(evs), err
}

func (d *plantedDecode) events(evs []sdkpdasync.Event) []sdkpdasync.Event {
	var out []sdkpdasync.Event
	for _, e := range evs {
		switch {
		case d.fault == "never-free" && e.Kind == sdkpdasync.Freed:
			continue
		case d.fault == "ready-twice" && e.Kind == sdkpdasync.Ready:
			out = append(out, e)
		case d.fault == "wrong-digest" && e.Kind == sdkpdasync.Ready:
			e.Digests[0] = make([]byte, pd.DigestSize)
		}
		out = append(out, e)
	}
	return out
}

// plantedSystem is a system on two in-process servers of the planted
// engine ("" plants nothing).
func plantedSystem(t *testing.T, fault string, g pd.Geometry) *System {
	p := kernel.Plugin
	p.Kernel = planted{fault: fault, inner: kernel.Plugin.Kernel.(sdkpdasync.Kernel)}
	sys := NewSystem(plugin.InProcess("planted", sdk.Services(p)), plugin.InProcess("planted", sdk.Services(p)),
		plugintest.Dir(t), Config{PrefillBackend: arena.SHM{}, Seed: 1, Wait: 200 * time.Millisecond}, nil)
	t.Cleanup(func() { sys.Close(context.Background()) })
	return sys
}

// oracleCase is one room of two pages in two components (the first of two
// handles), opened one handle at a time, delivered, and a second room that
// is aborted with its handle held.
func oracleCase() *Case {
	return &Case{Geometry: pd.DefaultGeometry(1, 8),
		Rooms: []Room{
			{ID: 0, Src: []int64{2, 3}, Virt: []int64{1, 2}, Components: []Component{
				{Buffers: []int{0, 1}, Handles: []Handle{{0, 1}, {1, 1}}}, {Buffers: []int{2}, Handles: []Handle{{0, 2}}}}},
			{ID: 1, Src: []int64{5}, Virt: []int64{4}, Components: []Component{{Buffers: []int{0, 1, 2}, Handles: []Handle{{0, 1}}}}},
		},
		Steps: []Step{Release(HandleRef{0, 0, 0}), Release(HandleRef{0, 0, 1}), Deliver(0, 0, DeliverAll),
			Release(HandleRef{0, 1, 0}), Deliver(0, 1, DeliverAll), Abort(1)}}
}

// TestOracleCatchesPlantedFaults: each fault planted around the correct
// engine is reported by the check made for it, at the step it happens;
// the engine without a fault passes the same case.
func TestOracleCatchesPlantedFaults(t *testing.T) {
	c := oracleCase()
	for _, tc := range []struct {
		fault string
		kind  oracle.Kind
		says  string
	}{
		{"", "", ""},
		{"wrong-item-len", BadDescriptor, "item_len"},
		{"stray-copy", Outside, "no posted descriptor writes it"},
		{"done-twice", Completion, "notified the handle twice"},
		{"component-early", Completion, "before its handle"},
		{"hang", Liveness, "never told handle h0.0.0"},
		{"short-admit", Protocol, "answered 1 destination pages"},
		{"ready-aborted", EarlyRead, "it was aborted"},
		{"ready-twice", Protocol, "already over"},
		{"never-free", Liveness, "neither read the room nor freed its pages"},
		{"wrong-digest", Digest, "the decode read 0000000000000000"},
	} {
		res, err := plantedSystem(t, tc.fault, c.Geometry).Check(context.Background(), c)
		if err != nil {
			t.Fatalf("%s: %v", tc.fault, err)
		}
		if tc.fault == "" {
			if res.Failed() {
				t.Errorf("the correct engine fails: %v", res.Violations)
			}
			continue
		}
		i := slices.IndexFunc(res.Violations, func(v Violation) bool { return v.Kind == tc.kind })
		if i < 0 || !strings.Contains(res.Violations[i].Detail, tc.says) {
			t.Errorf("%s: violations %v; want %s saying %q", tc.fault, res.Violations, tc.kind, tc.says)
		}
	}
}

// TestTargetsShareProcesses: a system's targets (one per geometry, as
// shrinking makes them) share its two processes; each attaches again
// when another attached since, so that no case runs on another's arenas.
func TestTargetsShareProcesses(t *testing.T) {
	sys := plantedSystem(t, "", pd.DefaultGeometry(1, 8))
	three := oracleCase()
	one := withoutBuffer(withoutBuffer(three, 2), 1)
	for i, c := range []*Case{three, one, three, one} {
		res, err := sys.Check(context.Background(), c)
		if err != nil || res.Failed() {
			t.Fatalf("check %d (%d buffers): %v %v", i, len(c.Geometry.Buffers), err, res)
		}
	}
}
