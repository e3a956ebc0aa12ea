package workload

import "fmt"

// Names is the text form of a small enum of kinds (RowKind, read's
// VecKind): the kinds' names by value, for their String, MarshalText and
// UnmarshalText.
type Names[K ~uint8] struct {
	Names []string
	// Unknown formats a kind past Names with its number, e.g. "rowkind(%d)".
	Unknown string
	// Noun is what a name that is none of Names is called in the error,
	// e.g. "row kind".
	Noun string
}

// String is k's name.
func (n Names[K]) String(k K) string {
	if int(k) < len(n.Names) {
		return n.Names[k]
	}
	return fmt.Sprintf(n.Unknown, k)
}

// Parse sets *k to the kind named b; an unknown name is an error, and *k
// is left alone.
func (n Names[K]) Parse(b []byte, k *K) error {
	for i, name := range n.Names {
		if string(b) == name {
			*k = K(i)
			return nil
		}
	}
	return fmt.Errorf("unknown %s %q", n.Noun, b)
}
