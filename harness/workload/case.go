package workload

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
)

// Case is a case of any kernel, as property runs, reports and repro files
// handle it. Each kernel's case type (Store, and the transfer and read
// cases) implements it.
type Case interface {
	// Kernel names the kernel the case is for: "store", "transfer", "read".
	Kernel() string
	// String is a one-line summary.
	String() string
	// Describe writes the case in full for a report, a line per element,
	// indented by indent.
	Describe(w io.Writer, indent string)
	// Validate checks the case against a pool of slots.
	Validate(slots int) error
}

// caseTypes makes an empty case of each kernel, for decoding. A file that
// adds a case type registers it in an init function.
var caseTypes = map[string]func() Case{"store": func() Case { return &Store{} }}

// registerCase adds a kernel's case type.
func registerCase(kernel string, empty func() Case) { caseTypes[kernel] = empty }

// DecodeCase reads the JSON of a case of the given kernel, strictly.
func DecodeCase(kernel string, data []byte) (Case, error) {
	empty, ok := caseTypes[kernel]
	if !ok {
		return nil, fmt.Errorf("unknown kernel %q (cases this kvharness knows: %v)", kernel, caseKernels())
	}
	c := empty()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(c); err != nil {
		return nil, fmt.Errorf("%s case: %w", kernel, err)
	}
	return c, nil
}

// Kernel implements Case.
func (s *Store) Kernel() string { return "store" }

// Describe implements Case: the rows, valid then padded, at most 8.
func (s *Store) Describe(w io.Writer, indent string) {
	fmt.Fprintf(w, "%s%v\n", indent, s)
	const maxRows = 8
	for i := range min(s.Capacity(), maxRows) {
		role := "valid "
		if i >= s.Valid {
			role = "padded"
		}
		fmt.Fprintf(w, "%s  row %-3d %s loc %-6d %s seed %d\n", indent, i, role, s.Loc[i], s.Rows[i].Kind, s.Rows[i].Seed)
	}
	if s.Capacity() > maxRows {
		fmt.Fprintf(w, "%s  … %d more rows in the repro file\n", indent, s.Capacity()-maxRows)
	}
}

func caseKernels() []string {
	var out []string
	for k := range caseTypes {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
