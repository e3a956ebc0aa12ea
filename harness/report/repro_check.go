package report

import (
	"fmt"
	"regexp"

	"github.com/kvharness/kvharness/harness/internal/textsafe"
)

// Range checks of a repro file's fields: a file out of range is refused
// with the field named, never replayed as something else (a negative
// seed, a property no kind has, a record of violations that is not one).
// The case itself is the kind's decoder's to check.

// maxReproSlots bounds a repro file's pool: far above any real one, far
// below what would overflow the offsets computed from it.
const maxReproSlots = 1 << 34

// propertyName is what a violation kind looks like: a lowercase word.
var propertyName = regexp.MustCompile(`^[a-z][a-z0-9-]{0,31}$`)

func (f *reproFile) check() error {
	switch {
	case f.Slots < 1 || f.Slots > maxReproSlots:
		return fmt.Errorf("%w: slots %d: want 1..%d", ErrBadRepro, f.Slots, maxReproSlots)
	case f.BackgroundSeed < 0:
		return fmt.Errorf("%w: background_seed %d: want 0 or more", ErrBadRepro, f.BackgroundSeed)
	case f.Value != "" && f.Value != "recipe" && f.Value != "exact":
		return fmt.Errorf("%w: value %q: want recipe or exact", ErrBadRepro, textsafe.String(f.Value))
	case textsafe.String(f.Plugin) != f.Plugin || textsafe.String(f.Variant) != f.Variant:
		return fmt.Errorf("%w: plugin %q, variant %q: want printable names", ErrBadRepro, textsafe.String(f.Plugin), textsafe.String(f.Variant))
	}
	if err := f.Ran.check(); err != nil {
		return fmt.Errorf("%w: %v", ErrBadRepro, err)
	}
	if f.Found != nil {
		return f.Found.check()
	}
	return nil
}

// check refuses a record of how the case ran whose numbers no run had, or
// whose names would print what a terminal obeys.
func (r *Ran) check() error {
	switch {
	case r.HeadDim < 0 || r.HeadDim > maxReproDim:
		return fmt.Errorf("head_dim %d: want 1..%d (or leave it out)", r.HeadDim, maxReproDim)
	case r.PageSize < 0 || r.PageSize > maxReproDim:
		return fmt.Errorf("page_size %d: want 1..%d (or leave it out)", r.PageSize, maxReproDim)
	case r.MaxCapacity < 0 || r.MaxCapacity > maxReproSlots:
		return fmt.Errorf("max_capacity %d: want 0..%d", r.MaxCapacity, int64(maxReproSlots))
	case r.SlotBits != 0 && r.SlotBits != 32 && r.SlotBits != 64:
		return fmt.Errorf("slot_bits %d: want 32 or 64", r.SlotBits)
	case textsafe.String(r.Device) != r.Device:
		return fmt.Errorf("device %q: want a printable name", textsafe.String(r.Device))
	}
	if id := r.Identity; id != nil {
		switch {
		case textsafe.String(id.Name) != id.Name || textsafe.String(id.Version) != id.Version || textsafe.String(id.Of) != id.Of:
			return fmt.Errorf("plugin_identity %q %q of %q: want printable names", textsafe.String(id.Name), textsafe.String(id.Version), textsafe.String(id.Of))
		case id.SHA256 != "" && !sha256Hex.MatchString(id.SHA256):
			return fmt.Errorf("plugin_identity.sha256 %q: want 64 hex digits", textsafe.String(id.SHA256))
		}
	}
	return nil
}

// maxReproDim bounds a head dimension or a page size: 65536, as flags do.
const maxReproDim = 1 << 16

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

func (x *Found) check() error {
	switch {
	case !propertyName.MatchString(string(x.Property)):
		return fmt.Errorf("%w: found.property %q: want the name of a property, as in \"padding\"", ErrBadRepro, textsafe.String(string(x.Property)))
	case x.Seed < 0:
		return fmt.Errorf("%w: found.seed %d: want 0 or more", ErrBadRepro, x.Seed)
	case x.CaseIndex < 0:
		return fmt.Errorf("%w: found.case_index %d: want 0 or more", ErrBadRepro, x.CaseIndex)
	case x.Shrinks < 0:
		return fmt.Errorf("%w: found.shrinks %d: want 0 or more", ErrBadRepro, x.Shrinks)
	case x.Reruns < 0:
		return fmt.Errorf("%w: found.reruns %d: want 0 or more", ErrBadRepro, x.Reruns)
	case textsafe.String(x.Test) != x.Test:
		return fmt.Errorf("%w: found.test %q: want a printable go test line", ErrBadRepro, textsafe.String(x.Test))
	}
	switch x.Violations.(type) {
	case nil, []any:
		return nil
	}
	return fmt.Errorf("%w: found.violations: want a list of violations (or null), not %T", ErrBadRepro, x.Violations)
}
