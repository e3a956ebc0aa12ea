package report

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kvharness/kvharness/harness/internal/inputfile"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/protocol"
	"github.com/kvharness/kvharness/harness/workload"
)

// ReproVersion is the repro file format this harness writes: version 2
// records how the case ran (Ran). It reads version 1 too, whose files
// record none of it and replay on the host, as they always did.
const ReproVersion = 2

// Repro is a saved failing case: everything needed to run it again, the
// way it ran.
type Repro struct {
	Version int             `json:"version"`
	Kernel  protocol.Kernel `json:"kernel"`
	Plugin  string          `json:"plugin"`
	Variant string          `json:"variant,omitempty"`
	// Ran is the backend, mode, geometry and plugin the case ran with
	// (version 2 on; zero in a version 1 file).
	Ran
	Layout         json.RawMessage `json:"layout"`
	Slots          int             `json:"slots"`
	BackgroundSeed int64           `json:"background_seed"`
	Case           workload.Case   `json:"case"`
	// Value is how the case's fp8 values were judged, for kinds that
	// judge them (stores): "recipe", by the layout's recipes (Layout
	// holds them, the plugin's declared one applied), or "exact".
	Value string `json:"value,omitempty"`
	Found *Found `json:"found,omitempty"`
	// Tag names the file after its plugin, variant and layout: a store's
	// padding convention, else the kernel.
	Tag string `json:"-"`
	// Count is how many times a replay checks the case (repro --count);
	// 0 or 1: once, and once more to confirm a failure.
	Count int `json:"-"`
	// Own is the plugin's own name (its Describe's): what the file is
	// named after, where Plugin may be a manifest's path.
	Own string `json:"-"`
}

// Ran is how a case ran: what a repro file records so that its replay
// runs on the same backend, in the same mode, at the same geometry, and
// can tell whether the plugin is the one that failed.
type Ran struct {
	Backend       string `json:"backend,omitempty"`        // "cpu" or "cuda"
	Device        string `json:"device,omitempty"`         // the GPU's name, on cuda
	DeviceOrdinal int    `json:"device_ordinal,omitempty"` // its CUDA ordinal, on cuda
	// Graph: stores captured in a CUDA graph at their capacity and
	// replayed, as serving engines run them.
	Graph       bool `json:"graph"`
	HeadDim     int  `json:"head_dim,omitempty"`
	PageSize    int  `json:"page_size,omitempty"`
	MaxCapacity int  `json:"max_capacity,omitempty"` // stores: the largest capacity the search drew
	// SlotBits is the width of the slot indices the plugin declared it
	// reads (stores: 32 or 64).
	SlotBits int             `json:"slot_bits,omitempty"`
	Identity *PluginIdentity `json:"plugin_identity,omitempty"`
}

// PluginIdentity is the plugin that ran: its name and version as it
// described itself, and the SHA-256 of what started it (Of: its binary, a
// command plugin's script, or its manifest).
type PluginIdentity struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	SHA256  string `json:"sha256,omitempty"`
	Of      string `json:"of,omitempty"` // "binary", "script" or "manifest", and its path
}

// Backends a repro file may record.
const (
	BackendCPU  = "cpu"
	BackendCUDA = "cuda"
)

// OnBackend is the backend the case ran on: a version 1 file's, which
// records none, is the host's (where such files always replayed).
func (r Ran) OnBackend() string {
	if r.Backend == "" {
		return BackendCPU
	}
	return r.Backend
}

// Where says where and how the case ran, for a replay's first line:
// "cuda (NVIDIA H100 80GB HBM3, device 0) with graph replay", "cpu".
func (r Ran) Where() string {
	s := r.OnBackend()
	if r.Backend == BackendCUDA {
		if r.Device != "" {
			s += fmt.Sprintf(" (%s, device %d)", r.Device, r.DeviceOrdinal)
		} else {
			s += fmt.Sprintf(" (device %d)", r.DeviceOrdinal)
		}
	}
	if r.Graph {
		s += " with graph replay"
	}
	return s
}

// reproFile is Repro as stored: the case stays raw until the kernel field
// says which case type to decode it into. Its Case shadows Repro.Case.
type reproFile struct {
	Repro
	Case json.RawMessage `json:"case"`
}

// Found records how and where the case was found.
type Found struct {
	Property  oracle.Kind `json:"property"`
	Flaky     bool        `json:"flaky,omitempty"`
	Seed      int64       `json:"seed"`
	CaseIndex int         `json:"case_index"`
	Shrinks   int         `json:"shrinks"`
	// Reruns counts the re-runs that confirming the failure took when
	// more than one: the earlier ones passed, the case fails only some
	// runs (replay it with repro --count).
	Reruns int    `json:"reruns,omitempty"`
	Test   string `json:"test,omitempty"` // go test -run line, when a test found it
	// NeedsHistory: the case failed only in a plugin process that had run
	// other cases first; a fresh process passes it.
	NeedsHistory bool `json:"needs_history,omitempty"`
	// Violations are the minimal case's first violations, in the kind's
	// own form: a record for readers, not read back.
	Violations any `json:"violations"`
}

// ErrBadRepro is wrapped by every problem with a repro file's content.
var ErrBadRepro = errors.New("bad repro file")

// MaxReproBytes bounds what LoadRepro reads.
const MaxReproBytes = 64 << 20

// CaseDecoder reads the JSON of a case of the given kernel, strictly, and
// validates it against a pool of slots.
type CaseDecoder func(kernel protocol.Kernel, data []byte, slots int) (workload.Case, error)

// LoadRepro reads and validates a repro file.
func LoadRepro(path string, decode CaseDecoder) (*Repro, *layout.Layout, error) {
	data, err := inputfile.Read(path, "repro file", MaxReproBytes)
	if err != nil {
		return nil, nil, err
	}
	r, l, err := ParseRepro(data, decode)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w; correct the file, or save it again (kvharness check writes repro files)", path, err)
	}
	return r, l, nil
}

// ParseRepro decodes and validates repro file content.
func ParseRepro(data []byte, decode CaseDecoder) (*Repro, *layout.Layout, error) {
	if len(data) > MaxReproBytes {
		return nil, nil, fmt.Errorf("%w: %d bytes, more than %d", ErrBadRepro, len(data), MaxReproBytes)
	}
	var f reproFile
	if err := inputfile.DecodeJSON(data, &f); err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrBadRepro, err)
	}
	switch {
	case f.Version > ReproVersion:
		return nil, nil, fmt.Errorf("%w: format version %d is newer than this kvharness reads (%d); update kvharness", ErrBadRepro, f.Version, ReproVersion)
	case f.Version < 1:
		return nil, nil, fmt.Errorf("%w: no format version", ErrBadRepro)
	case len(f.Case) == 0:
		return nil, nil, fmt.Errorf("%w: no case", ErrBadRepro)
	}
	if err := f.check(); err != nil { // repro_check.go
		return nil, nil, err
	}
	if err := f.checkRan(); err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrBadRepro, err)
	}
	l, err := layout.Parse(f.Layout, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrBadRepro, err)
	}
	c, err := decode(f.Kernel, f.Case, f.Slots)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrBadRepro, err)
	}
	r := f.Repro
	r.Case = c
	return &r, l, nil
}

// checkRan refuses a record of how the case ran that no replay can
// follow: a version 2 file names its backend; a version 1 file has none
// of it.
func (f *reproFile) checkRan() error {
	switch {
	case f.Version == 1 && f.Ran != (Ran{}):
		return fmt.Errorf("a version 1 file records no backend, mode or plugin identity; this one does (backend %q): write version %d", f.Backend, ReproVersion)
	case f.Version == 1:
		return nil
	case f.Backend != BackendCPU && f.Backend != BackendCUDA:
		return fmt.Errorf("backend %q: want %q or %q", f.Backend, BackendCPU, BackendCUDA)
	case f.Graph && f.Backend != BackendCUDA:
		return fmt.Errorf("graph replay on the %s backend: CUDA graphs need backend %q", f.Backend, BackendCUDA)
	case f.DeviceOrdinal < 0:
		return fmt.Errorf("device_ordinal %d: want 0 or more", f.DeviceOrdinal)
	}
	return nil
}

// Name is a stable file name: plugin (its own name where known),
// variant, layout, padding, property and a hash of the content, so the
// same finding overwrites itself.
func (r *Repro) Name() string {
	body, _ := json.Marshal(r.Case)
	sum := sha256.Sum256(append(append([]byte(r.Plugin+r.Variant), r.Layout...), body...))
	parts := []string{displayName(r.Plugin)}
	if r.Own != "" {
		parts[0] = r.Own
	}
	if r.Variant != "" {
		parts = append(parts, r.Variant)
	}
	var l struct{ Name string }
	json.Unmarshal(r.Layout, &l)
	parts = append(parts, l.Name)
	if r.Tag != "" {
		parts = append(parts, r.Tag)
	} else {
		parts = append(parts, string(r.Kernel))
	}
	if r.Found != nil {
		parts = append(parts, string(r.Found.Property))
	}
	parts = append(parts, hex.EncodeToString(sum[:4]))
	return boundedName(safeName(strings.Join(parts, "-"))) + ".json"
}

// maxNameBytes bounds a repro file's name without its .json: a file name
// holds 255 bytes, and the file is first written as .NAME.tmp-NNNNNNNNN.
const maxNameBytes = 160

// boundedName keeps a name within maxNameBytes: a longer one (a variant or
// layout named at length) keeps its start and ends in a hash of the whole
// (ASCII, as safeName leaves it), so two long names still differ.
func boundedName(name string) string {
	if len(name) <= maxNameBytes {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return name[:maxNameBytes-9] + "~" + hex.EncodeToString(sum[:4])
}

// displayName is how a file name shows the plugin: a bundled name as it
// is, a path or command line by its program's base name ("./mybuggy" is
// "mybuggy", not a hidden "._mybuggy").
func displayName(plugin string) string {
	if f := strings.Fields(plugin); len(f) > 0 {
		plugin = f[len(f)-1] // a command line: its script
	}
	name := strings.TrimSuffix(filepath.Base(plugin), ".json")
	if name = strings.TrimLeft(name, "."); name == "" {
		return "plugin"
	}
	return name
}

func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' || r == '_' {
			return r
		}
		return '_'
	}, s)
}

// Save writes the repro file into dir, whole or not at all, and returns
// its path.
func (r *Repro) Save(dir string) (string, error) {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("make results folder: %w", err)
	}
	path := filepath.Join(dir, r.Name())
	return path, WriteFileAtomic(path, append(data, '\n'), 0o644)
}

// WriteFileAtomic writes data to a temporary file beside path, syncs it and
// renames it into place: readers see the old file or the new one, never
// half of one.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, perm)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
