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
	if f.Found != nil {
		return f.Found.check()
	}
	return nil
}

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
