package results

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Mode is how the kernel is launched.
type Mode string

// Launch modes.
const (
	Eager Mode = "eager" // one launch per call
	Graph Mode = "graph" // replayed from a captured CUDA graph
)

// Cache is the state of the cache when the kernel runs.
type Cache string

// Cache states.
const (
	Hot  Cache = "hot"  // inputs already resident in L2
	Cold Cache = "cold" // L2 flushed before each launch
)

// Timing is how launches are timed.
type Timing string

// Timing methods.
const (
	PerLaunch Timing = "per-launch" // one sample per launch
	Batched   Timing = "batched"    // one sample per BatchSize launches, divided by BatchSize
)

// Kernels of the reference cells a bench measures beside a kind's own
// (whose kernel is the kind's name: "store", "load").
const (
	KernelCopy  = "copy"  // a copy of the same bytes: the roofline
	KernelEmpty = "empty" // an empty launch (one token): the floor of tiny batches
)

// IsReference reports whether cells of kernel are references, measured
// beside a kind's own cells: a copy or an empty launch.
func IsReference(kernel string) bool { return kernel == KernelCopy || kernel == KernelEmpty }

// An Identity names a cell of the benchmark matrix. Two cells with the
// same Identity measure the same thing.
type Identity struct {
	Plugin        string `json:"plugin"`
	PluginVersion string `json:"plugin_version"`
	Variant       string `json:"variant,omitempty"`
	Kernel        string `json:"kernel"` // the kind's ("store", "load"), or a reference's (KernelCopy, KernelEmpty)
	Layout        string `json:"layout"`
	HeadDim       int    `json:"head_dim"`
	PageSize      int    `json:"page_size"`
	Tokens        int    `json:"tokens"`
	Mode          Mode   `json:"mode"`
	Cache         Cache  `json:"cache"`
	Timing        Timing `json:"timing"`
	BatchSize     int    `json:"batch_size"` // launches per sample; 1 for per-launch
	// SlotRun is how many consecutive slots the slots came in runs of (0
	// or 1: every slot drawn alone); a cell with runs names slot_run=N.
	SlotRun int `json:"slot_run,omitempty"`
	// Rotate is how many data sets the launches took in turn (0 or 1: one,
	// repeated). A cell that rotates is another benchmark than one that
	// does not: the name says rotate=N.
	Rotate int `json:"rotate,omitempty"`
}

// A Key identifies a cell for --resume: its benchmark name plus the plugin
// version, so a rebuilt plugin is measured again.
type Key string

// Key returns id's key.
func (id Identity) Key() Key { return Key(id.Name() + "@" + id.PluginVersion) }

// A Field is one key=value part of a benchmark name.
type Field struct{ Key, Value string }

// Fields returns the parts of id's benchmark name in order. The plugin
// version is left out: it is a config line, so that two versions of a
// plugin compare as the same benchmark.
func (id Identity) Fields() []Field {
	f := []Field{{"plugin", id.Plugin}}
	if id.Variant != "" {
		f = append(f, Field{"variant", id.Variant})
	}
	f = append(f,
		Field{"layout", id.Layout},
		Field{"head_dim", strconv.Itoa(id.HeadDim)},
		Field{"page_size", strconv.Itoa(id.PageSize)},
		Field{"tokens", strconv.Itoa(id.Tokens)})
	if id.SlotRun > 1 {
		f = append(f, Field{"slot_run", strconv.Itoa(id.SlotRun)})
	}
	f = append(f,
		Field{"mode", string(id.Mode)},
		Field{"cache", string(id.Cache)})
	if id.Rotate > 1 {
		f = append(f, Field{"rotate", strconv.Itoa(id.Rotate)})
	}
	f = append(f, Field{"timing", string(id.Timing)})
	// The batch size is not part of a cell's identity: the runner sizes
	// batches from a probe launch, so two nights may pick different ones
	// for the same cell, and their results must still line up.
	return f
}

// Name is id's Go benchmark name without the "Benchmark" prefix, for
// example "Store/plugin=fusedstore/layout=bf16/head_dim=128/page_size=16/
// tokens=4096/mode=graph/cache=hot/timing=per-launch".
func (id Identity) Name() string {
	var b strings.Builder
	b.WriteString(baseName(id.Kernel))
	for _, f := range id.Fields() {
		fmt.Fprintf(&b, "/%s=%s", f.Key, f.Value)
	}
	return b.String()
}

// baseName capitalises the kernel, as Go benchmark names start upper
// case: "store" becomes "Store".
func baseName(kernel string) string {
	if kernel == "" {
		return "Unnamed"
	}
	return strings.ToUpper(kernel[:1]) + kernel[1:]
}

// Validate reports the first problem that would make id ambiguous or
// unreadable as a benchmark name.
func (id Identity) Validate() error {
	for _, f := range []Field{{"kernel", id.Kernel}, {"plugin", id.Plugin}, {"layout", id.Layout}} {
		if err := checkWord(f.Key, f.Value); err != nil {
			return err
		}
	}
	if id.Variant != "" {
		if err := checkWord("variant", id.Variant); err != nil {
			return err
		}
	}
	if strings.ContainsFunc(id.PluginVersion, unicode.IsSpace) {
		return fmt.Errorf("plugin_version %q contains white space (a config value must fit on one line)", id.PluginVersion)
	}
	if err := id.checkSizes(); err != nil {
		return err
	}
	return id.checkEnums()
}

func (id Identity) checkSizes() error {
	if id.HeadDim <= 0 || id.PageSize <= 0 || id.Tokens <= 0 {
		return fmt.Errorf("head_dim %d, page_size %d and tokens %d must all be positive", id.HeadDim, id.PageSize, id.Tokens)
	}
	if id.Rotate < 0 || id.SlotRun < 0 {
		return fmt.Errorf("rotate %d and slot_run %d must not be negative", id.Rotate, id.SlotRun)
	}
	return nil
}

func (id Identity) checkEnums() error {
	if id.Mode != Eager && id.Mode != Graph {
		return fmt.Errorf("mode %q is not %q or %q", id.Mode, Eager, Graph)
	}
	if id.Cache != Hot && id.Cache != Cold {
		return fmt.Errorf("cache %q is not %q or %q", id.Cache, Hot, Cold)
	}
	switch {
	case id.Timing == PerLaunch && id.BatchSize > 1:
		return fmt.Errorf("per-launch timing with batch_size %d (use timing %q, or batch_size 1)", id.BatchSize, Batched)
	case id.Timing == Batched && id.BatchSize < 1:
		return fmt.Errorf("batched timing needs batch_size ≥ 1, got %d", id.BatchSize)
	case id.Timing != PerLaunch && id.Timing != Batched:
		return fmt.Errorf("timing %q is not %q or %q", id.Timing, PerLaunch, Batched)
	}
	return nil
}

// checkWord rejects values that would split or blur a benchmark name:
// empty, white space, '/' (a name separator) or '=' (a key separator).
func checkWord(key, v string) error {
	if v == "" {
		return fmt.Errorf("%s is empty", key)
	}
	if i := strings.IndexFunc(v, func(r rune) bool { return unicode.IsSpace(r) || r == '/' || r == '=' }); i >= 0 {
		r, _ := utf8.DecodeRuneInString(v[i:])
		return fmt.Errorf("%s %q contains %q (white space, '/' and '=' would break the benchmark name; rename it)", key, v, r)
	}
	return nil
}
