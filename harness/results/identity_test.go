package results

import (
	"strings"
	"testing"
)

func TestName(t *testing.T) {
	id := Identity{Plugin: "fusedstore", PluginVersion: "1.0", Kernel: "store", Layout: "bf16",
		HeadDim: 128, PageSize: 16, Tokens: 4096, Mode: Graph, Cache: Hot, Timing: PerLaunch, BatchSize: 1}
	want := "Store/plugin=fusedstore/layout=bf16/head_dim=128/page_size=16/tokens=4096/mode=graph/cache=hot/timing=per-launch"
	if got := id.Name(); got != want {
		t.Errorf("Name() = %q, want %q", got, want)
	}
	if got := id.Key(); got != Key(want+"@1.0") {
		t.Errorf("Key() = %q, want the name plus @1.0", got)
	}
	id.Variant, id.Timing, id.BatchSize = "v2", Batched, 64
	want = "Store/plugin=fusedstore/variant=v2/layout=bf16/head_dim=128/page_size=16/tokens=4096/mode=graph/cache=hot/timing=batched" // the batch size is data, not identity
	if got := id.Name(); got != want {
		t.Errorf("batched Name() = %q, want %q", got, want)
	}
	id.Rotate = 1 // one data set, repeated: the same benchmark as no rotation
	if got := id.Name(); got != want {
		t.Errorf("rotate 1: Name() = %q, want %q", got, want)
	}
	id.Rotate = 4
	want = "Store/plugin=fusedstore/variant=v2/layout=bf16/head_dim=128/page_size=16/tokens=4096/mode=graph/cache=hot/rotate=4/timing=batched"
	if got := id.Name(); got != want {
		t.Errorf("rotate 4: Name() = %q, want %q", got, want)
	}
	id.SlotRun = 16
	want = "Store/plugin=fusedstore/variant=v2/layout=bf16/head_dim=128/page_size=16/tokens=4096/slot_run=16/mode=graph/cache=hot/rotate=4/timing=batched"
	if got := id.Name(); got != want {
		t.Errorf("slot_run 16: Name() = %q, want %q", got, want)
	}
}

func TestKeyDistinguishesVersions(t *testing.T) {
	a := Identity{Plugin: "p", PluginVersion: "1", Kernel: "store"}
	b := a
	b.PluginVersion = "2"
	if a.Key() == b.Key() || a.Name() != b.Name() {
		t.Errorf("versions 1 and 2: keys %q, %q (want different), names %q, %q (want equal)", a.Key(), b.Key(), a.Name(), b.Name())
	}
}

func TestIdentityValidate(t *testing.T) {
	ok := Identity{Plugin: "p", Kernel: "store", Layout: "bf16", HeadDim: 128, PageSize: 16, Tokens: 1,
		Mode: Eager, Cache: Cold, Timing: PerLaunch, BatchSize: 1}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid identity: %v", err)
	}
	for _, tc := range []struct {
		edit func(*Identity)
		want string
	}{
		{func(id *Identity) { id.Plugin = "" }, "plugin is empty"},
		{func(id *Identity) { id.Layout = "bf/16" }, `contains '/'`},
		{func(id *Identity) { id.Variant = "a b" }, "contains ' '"},
		{func(id *Identity) { id.Plugin = "a=b" }, "contains '='"},
		{func(id *Identity) { id.PluginVersion = "1 2" }, "white space"},
		{func(id *Identity) { id.Tokens = 0 }, "must all be positive"},
		{func(id *Identity) { id.Rotate = -1 }, "rotate -1"},
		{func(id *Identity) { id.Mode = "lazy" }, `mode "lazy"`},
		{func(id *Identity) { id.Cache = "warm" }, `cache "warm"`},
		{func(id *Identity) { id.Timing = "batch" }, `timing "batch"`},
		{func(id *Identity) { id.BatchSize = 8 }, "per-launch timing with batch_size 8"},
		{func(id *Identity) { id.Timing, id.BatchSize = Batched, 0 }, "batch_size ≥ 1"},
	} {
		id := ok
		tc.edit(&id)
		err := id.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%+v) = %v, want an error containing %q", id, err, tc.want)
		}
	}
}
