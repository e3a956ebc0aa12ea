package workload

import "io"

// Case is a case of any kernel kind, as reports and repro files handle it.
// Each kind's case type (harness/kernels/...) implements it.
type Case interface {
	// String is a one-line summary.
	String() string
	// Describe writes the case in full for a report, a line per element,
	// indented by indent.
	Describe(w io.Writer, indent string)
}
