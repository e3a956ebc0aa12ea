package fuzz

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/kvharness/kvharness/harness/check"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/harness/report"
	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/harness/workload"
	pdtransfer "github.com/kvharness/kvharness/plugins/pdtransfer/kernel"
)

// The fuzzed transfer geometry: two DeepSeek-V4-like layers of 16 pages.
// Inputs choose a subset of its buffers, up to TransferMaxRooms rooms of
// up to TransferMaxPages pages each (workload.DecodeTransfer).
const (
	TransferPages    = 16
	TransferMaxRooms = 4
	TransferMaxPages = 8
)

var transferBase = workload.DefaultTransferGeometry(2, TransferPages)

// FuzzTransfer checks decoded transfer cases against the plugin named by
// KVHARNESS_PLUGIN (default pdtransfer): descriptors, bytes, guards and
// room digests, each case twice. Run it with:
//
//	go test -run='^$' -fuzz='^FuzzTransfer$' -fuzztime=30s ./fuzz
//
// A plugin without a transfer kernel skips it.
func FuzzTransfer(f *testing.F) {
	env, err := NewTransferEnv()
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(env.Close)
	if err := env.start(context.Background()); errors.Is(err, check.ErrUnsupported) {
		f.Skip(err)
	} else if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := env.Check(context.Background(), data)
		if err != nil {
			t.Fatalf("case %v: %v", workload.DecodeTransfer(data, transferBase, TransferMaxRooms, TransferMaxPages), err)
		}
		if res.Failed() {
			var b bytes.Buffer
			report.WriteTransferResult(&b, res)
			t.Fatalf("%s transfer: property %s violated\n%s", env.Plugin, res.Primary(), b.String())
		}
	})
}

// TransferEnv is what a fuzz worker keeps between transfer inputs: the
// plugin, restarted after a fault, and a target per geometry.
type TransferEnv struct {
	Plugin, Variant, Mode string

	dir *pool.Dir
	p   *plugin.Plugin
	sys *property.Transfers
}

// NewTransferEnv reads the plugin choice from the environment, as NewEnv
// does, with pdtransfer as the default plugin.
func NewTransferEnv() (*TransferEnv, error) {
	e := &TransferEnv{Plugin: os.Getenv("KVHARNESS_PLUGIN"), Variant: os.Getenv("KVHARNESS_VARIANT"), Mode: os.Getenv("KVHARNESS_FUZZ_MODE")}
	if e.Plugin == "" {
		e.Plugin = "pdtransfer"
	}
	if e.Mode == "" {
		e.Mode = "out-of-process"
	}
	if e.Mode != "out-of-process" && e.Mode != "in-process" {
		return nil, fmt.Errorf("KVHARNESS_FUZZ_MODE=%q: want out-of-process or in-process", e.Mode)
	}
	if e.Mode == "in-process" && e.Plugin != "pdtransfer" {
		return nil, fmt.Errorf("KVHARNESS_FUZZ_MODE=in-process transfers need pdtransfer, not %q", e.Plugin)
	}
	dir, err := pool.OpenDir()
	if err != nil {
		return nil, err
	}
	e.dir = dir
	return e, nil
}

// Close stops the plugin and removes the run directory.
func (e *TransferEnv) Close() {
	e.reset()
	e.dir.Close()
}

func (e *TransferEnv) reset() {
	if e.sys != nil {
		e.sys.Close(context.Background())
	}
	if e.p != nil {
		e.p.Close()
	}
	e.p, e.sys = nil, nil
}

// start launches the plugin and opens the full geometry's target, which
// fails with check.ErrUnsupported for a plugin without transfers.
func (e *TransferEnv) start(ctx context.Context) error {
	if e.p != nil {
		return nil
	}
	if e.Mode == "in-process" {
		e.p = plugin.InProcess(e.Plugin, sdk.NewServer(pdtransfer.Plugin))
	} else {
		path, err := resolveTransferPlugin(e.Plugin)
		if err != nil {
			return err
		}
		if e.p, err = plugin.Start(ctx, e.Plugin, path, plugin.Options{Dir: e.dir}); err != nil {
			return err
		}
	}
	e.sys = property.NewTransfers(e.p, e.dir, check.TransferConfig{Variant: e.Variant, Seed: 1}, nil)
	_, err := e.sys.Target(ctx, transferBase)
	return err
}

// Check decodes one input and checks it. A plugin fault resets the
// environment so that the next input gets a fresh plugin.
func (e *TransferEnv) Check(ctx context.Context, data []byte) (*check.TransferResult, error) {
	if err := e.start(ctx); err != nil {
		e.reset()
		return nil, err
	}
	c := workload.DecodeTransfer(data, transferBase, TransferMaxRooms, TransferMaxPages)
	r, err := e.sys.Check(ctx, c)
	if err != nil {
		e.reset()
		return nil, err
	}
	res, _ := e.sys.Details(r)
	return res, nil
}

// resolveTransferPlugin finds a plugin binary. pdtransfer is built from the
// source tree into the user cache until the harness bundles it.
func resolveTransferPlugin(name string) (string, error) {
	path, err := plugin.Resolve(name)
	if err == nil || name != "pdtransfer" || !errors.Is(err, plugin.ErrNotFound) {
		return path, err
	}
	root, ok := plugin.SourceRoot()
	if !ok {
		return "", err
	}
	cache, cerr := os.UserCacheDir()
	if cerr != nil {
		cache = os.TempDir()
	}
	out := filepath.Join(cache, "kvharness", "plugins", "pdtransfer")
	tmp := fmt.Sprintf("%s.build-%d", out, os.Getpid())
	cmd := exec.Command("go", "build", "-o", tmp, "./plugins/pdtransfer")
	cmd.Dir = root
	if b, berr := cmd.CombinedOutput(); berr != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("build pdtransfer: %w\n%s", berr, b)
	}
	return out, os.Rename(tmp, out)
}

// TransferSeed is a minimal transfer case for one bug class, kept in the
// FuzzTransfer seed corpus. Kills names the pdtransfer variant it must
// kill ("" for an edge case every mutant may pass).
type TransferSeed struct {
	Name  string
	Kills string
	Case  *workload.Transfer
	Why   string
}

// seedBuffers picks base buffers by name, in base order.
func seedBuffers(names ...string) workload.TransferGeometry {
	g := transferBase.Clone()
	g.Buffers = g.Buffers[:0]
	for _, b := range transferBase.Buffers {
		for _, n := range names {
			if b.Name == n {
				g.Buffers = append(g.Buffers, b)
			}
		}
	}
	return g
}

func seedRooms(pairs ...[2][]int64) []workload.Room {
	out := make([]workload.Room, len(pairs))
	for i, p := range pairs {
		out[i] = workload.Room{ID: uint64(i), Src: p[0], Dst: p[1]}
	}
	return out
}

func seedPages(ps ...int64) []int64 { return ps }

// wrapPage is the logical page the index-K page table maps to physical
// page 0.
var wrapPage = int64(TransferPages - transferBase.Buffers[2].Shift)

// TransferSeeds is the FuzzTransfer seed corpus: a minimal case per
// pdtransfer mutant, and the edges runs are built around. pdtransfer passes
// every one.
var TransferSeeds = []TransferSeed{
	{"bf16-page", "fp8-item-len", &workload.Transfer{Geometry: seedBuffers("L0.kv"), Rooms: seedRooms([2][]int64{seedPages(3), seedPages(5)})},
		"one bf16 page: sent with an fp8 item_len it is cut short and shifted"},
	{"indexk-page", "skip-buffer", &workload.Transfer{Geometry: seedBuffers("L0.indexk"), Rooms: seedRooms([2][]int64{seedPages(0), seedPages(1)})},
		"the index-K buffer alone: a transfer that forgets it sends nothing"},
	{"shared-allocation", "base-addr-dedup", &workload.Transfer{Geometry: seedBuffers("L0.kv", "L0.state"), Rooms: seedRooms([2][]int64{seedPages(2), seedPages(7)})},
		"two buffers carved from one allocation: merged by base address, the second is never sent"},
	{"two-page-tables", "legacy-page-map", &workload.Transfer{Geometry: seedBuffers("L0.kv", "L0.indexk"), Rooms: seedRooms([2][]int64{seedPages(1), seedPages(4)})},
		"buffers on different page tables: the first buffer's pages are wrong for the second"},
	{"run-of-three", "last-run-truncated", &workload.Transfer{Geometry: seedBuffers("L0.kv"), Rooms: seedRooms([2][]int64{seedPages(4, 5, 6), seedPages(8, 9, 10)})},
		"one run of three pages: its last page is the one cut off"},
	{"page-table-wrap", "", &workload.Transfer{Geometry: seedBuffers("L0.indexk"), Rooms: seedRooms([2][]int64{seedPages(wrapPage-1, wrapPage), seedPages(2, 3)})},
		"a run contiguous in the room but wrapping in the buffer's page table: two descriptors"},
	{"first-and-last-page", "", &workload.Transfer{Geometry: seedBuffers("L0.kv", "L1.indexk"), Rooms: seedRooms([2][]int64{seedPages(0, TransferPages-1), seedPages(TransferPages-1, 0)})},
		"page 0 and the last page, swapped: offsets at both ends of the pools"},
	{"broken-runs", "", &workload.Transfer{Geometry: seedBuffers("L1.kv", "L1.state"), Rooms: seedRooms(
		[2][]int64{seedPages(3, 4, 5), seedPages(9, 10, 12)}, [2][]int64{seedPages(7, 9), seedPages(0, 1)})},
		"runs contiguous on one side only, two rooms: descriptors must split where either side breaks"},
}

// Input encodes a seed as a fuzz input.
func (s TransferSeed) Input() []byte {
	data, err := workload.EncodeTransfer(s.Case, transferBase, TransferMaxRooms, TransferMaxPages)
	if err != nil {
		panic(fmt.Sprintf("seed %s: %v", s.Name, err))
	}
	return data
}

func transferCorpusFile(s TransferSeed) string {
	return filepath.Join("testdata", "fuzz", "FuzzTransfer", s.Name)
}

// TestTransferSeedCorpus keeps testdata/fuzz/FuzzTransfer in step with
// TransferSeeds; run with -update after changing a seed.
func TestTransferSeedCorpus(t *testing.T) {
	for _, s := range TransferSeeds {
		entry := fmt.Appendf(nil, "go test fuzz v1\n[]byte(%q)\n", s.Input())
		if *update {
			os.MkdirAll(filepath.Dir(transferCorpusFile(s)), 0o755)
			if err := os.WriteFile(transferCorpusFile(s), entry, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := os.ReadFile(transferCorpusFile(s))
		if err != nil || string(got) != string(entry) {
			t.Errorf("%s: corpus file missing or stale (%v); run go test ./fuzz -run TestTransferSeedCorpus -update", s.Name, err)
		}
		if c := workload.DecodeTransfer(s.Input(), transferBase, TransferMaxRooms, TransferMaxPages); c.String() != s.Case.String() || c.Geometry.Key() != s.Case.Geometry.Key() {
			t.Errorf("%s decodes to %v, want %v", s.Name, c, s.Case)
		}
	}
}

// TestTransferSeedsKillEveryMutant: pdtransfer passes every seed, and each
// variant is killed by the seed made for it (in process, for speed).
func TestTransferSeedsKillEveryMutant(t *testing.T) {
	variants := []string{""}
	for _, v := range pdtransfer.Plugin.Variants {
		variants = append(variants, v.Name)
	}
	for _, v := range variants {
		t.Setenv("KVHARNESS_PLUGIN", "pdtransfer")
		t.Setenv("KVHARNESS_VARIANT", v)
		t.Setenv("KVHARNESS_FUZZ_MODE", "in-process")
		killedBy := replayTransferSeeds(t)
		switch {
		case v == "" && len(killedBy) > 0:
			t.Errorf("pdtransfer fails seeds %v", killedBy)
		case v != "" && !killedByOwnSeed(v, killedBy):
			t.Errorf("variant %s is killed by %v, not by its own seed", v, killedBy)
		}
	}
}

func killedByOwnSeed(variant string, seeds []string) bool {
	for _, s := range TransferSeeds {
		for _, k := range seeds {
			if s.Name == k && s.Kills == variant {
				return true
			}
		}
	}
	return false
}

func replayTransferSeeds(t *testing.T) []string {
	env, err := NewTransferEnv()
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	var failed []string
	for _, s := range TransferSeeds {
		res, err := env.Check(context.Background(), s.Input())
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		if res.Failed() {
			failed = append(failed, s.Name)
		}
	}
	return failed
}
