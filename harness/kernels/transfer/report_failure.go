package transfer

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/kvharness/kvharness/harness/check"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/property"
)

// TransferFailure is one failing transfer row, with what is needed to
// print it. Details is the transfer result behind the verdict's minimal
// case (TransferSuite.Details); without it the report falls back to the
// generic violations.
type TransferFailure struct {
	Plugin, Variant string
	Verdict         property.Verdict
	Details         *check.TransferResult
	ReproPath       string
	Test            string // go test -run line, when a test found it
	Replayed        bool   // the case came from a repro file, not a search
}

// WriteTransferFailure prints the minimal case, its violations located by
// room, buffer, page and descriptor, the descriptors and the room digests.
func WriteTransferFailure(w io.Writer, f TransferFailure) {
	o := f.Verdict.Outcome
	fl := o.Failure
	status := "FAIL"
	if fl.Flaky {
		status = "FLAKY"
	}
	fmt.Fprintf(w, "%s %s%s · transfer · profile %s · property %s\n", status, f.Plugin, variantSuffix(f.Variant), f.Verdict.Label, fl.Property)
	switch {
	case fl.Flaky && f.Replayed:
		fmt.Fprintf(w, "  replayed case failed once, then passed when re-run:\n")
	case fl.Flaky:
		fmt.Fprintf(w, "  case %d of seed %d failed once, then passed when re-run; not shrunk\n", o.Cases, f.Verdict.Seed)
	case f.Replayed:
		fmt.Fprintf(w, "  replayed case, confirmed by a re-run:\n")
	default:
		fmt.Fprintf(w, "  found at case %d of seed %d, confirmed by a re-run, shrunk in %d steps to:\n", o.Cases, f.Verdict.Seed, fl.Shrinks)
	}
	if f.Details != nil {
		WriteTransferResult(w, f.Details)
	} else {
		WriteResult(w, nil, fl.Minimal)
	}
	if f.ReproPath != "" {
		fmt.Fprintf(w, "  replay: kvharness repro %s\n", f.ReproPath)
	}
	if f.Test != "" {
		fmt.Fprintf(w, "  test:   %s\n", f.Test)
	}
}

// maxDescriptors bounds the descriptors printed for one case.
const maxDescriptors = 8

// WriteTransferResult prints a checked transfer case: the case, its
// violations with want/got bytes, the descriptors the plugin answered and
// each room's digests as a decode server would compare them.
func WriteTransferResult(w io.Writer, r *check.TransferResult) {
	r.Case.Describe(w, "    ")
	writeTransferViolations(w, r)
	fmt.Fprintf(w, "  %d descriptor%s answered:\n", len(r.Descriptors), plural(len(r.Descriptors)))
	for i, d := range r.Descriptors {
		if i == maxDescriptors {
			fmt.Fprintf(w, "    … %d more\n", len(r.Descriptors)-i)
			break
		}
		fmt.Fprintf(w, "    #%-3d %s\n", i, d)
	}
	writeDigests(w, r.Digests)
}

func writeTransferViolations(w io.Writer, r *check.TransferResult) {
	fmt.Fprintf(w, "  %d violation%s:\n", len(r.Transfer), plural(len(r.Transfer)))
	for i, v := range r.Transfer {
		if i == MaxViolations {
			fmt.Fprintf(w, "    … %d more\n", len(r.Transfer)-i)
			break
		}
		fmt.Fprintf(w, "    %s\n", v)
		if v.Len == 0 {
			continue // no bytes of a pool: a descriptor, or digests the line already shows
		}
		for _, line := range hexDiff(r.Violations[i]) {
			fmt.Fprintf(w, "      %s\n", line)
		}
	}
}

// writeDigests prints the room digests: ok, or REJECT where decode's
// digest differs from prefill's.
func writeDigests(w io.Writer, ds []oracle.RoomDigest) {
	if len(ds) == 0 {
		return
	}
	fmt.Fprintf(w, "  room digests (SHA-256 of the room's pages in order, prefill vs decode):\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, d := range ds {
		verdict := "ok"
		if !d.Match() {
			verdict = "REJECT"
		}
		fmt.Fprintf(tw, "    room %d (id %d)\t%s\t%d pages\t%s\t%s\t%s\n", d.Room, d.RoomID, d.Buffer, d.Pages, d.Src, d.Dst, verdict)
	}
	tw.Flush()
}
