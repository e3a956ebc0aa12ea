package mutants

import (
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
	"time"
)

// WriteTable prints one row per subject. Times are left out when
// withTimes is false, so a golden file can hold the rest.
func WriteTable(w io.Writer, rs []Result, withTimes bool) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "plugin\tkernel\tvariant\tmust\tresult\tproperty\twhere\tcases")
	if withTimes {
		fmt.Fprint(tw, "\ttime")
	}
	fmt.Fprintln(tw)
	for _, r := range rs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d", r.Shown(), r.Kernel, orNone(r.Variant), must(r), outcome(r),
			orDash(string(r.Property)), where(r), r.Cases)
		if withTimes {
			fmt.Fprintf(tw, "\t%s", r.ToKill.Round(time.Millisecond))
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
}

// WriteSummary prints the verdict line and, with times, the median
// time-to-kill over killed mutants.
func WriteSummary(w io.Writer, rs []Result, withTimes bool) {
	killed, mutants, bad := 0, 0, 0
	var times []time.Duration
	for _, r := range rs {
		if r.Mutant {
			mutants++
			if r.Killed {
				killed++
				times = append(times, r.ToKill)
			}
		}
		if !r.OK() {
			bad++
		}
	}
	fmt.Fprintf(w, "\n%d of %d mutants killed; %d controls passed", killed, mutants, len(rs)-mutants-controlsFailed(rs))
	if withTimes && len(times) > 0 {
		fmt.Fprintf(w, "; median time to kill %s", median(times).Round(time.Millisecond))
	}
	fmt.Fprintln(w)
	for _, r := range rs {
		if r.Err != nil {
			fmt.Fprintf(w, "%s %s: %v\n", r.Shown(), orNone(r.Variant), r.Err)
		}
	}
	if bad > 0 {
		fmt.Fprintf(w, "FAIL: %d subject(s) did not behave (a surviving mutant or a failing control)\n", bad)
	}
}

func controlsFailed(rs []Result) int {
	n := 0
	for _, r := range rs {
		if !r.Mutant && !r.OK() {
			n++
		}
	}
	return n
}

func median(ts []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ts...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func must(r Result) string {
	if r.Mutant {
		return "die"
	}
	return "pass"
}

func outcome(r Result) string {
	switch {
	case r.Err != nil:
		return "FAULT"
	case r.Mutant && r.Killed:
		return "killed"
	case r.Mutant:
		return "SURVIVED"
	case r.Killed:
		return "FAILED"
	}
	return "passed"
}

func where(r Result) string {
	if !r.Killed {
		return "-"
	}
	return fmt.Sprintf("%s/%s", r.Layout, r.Label)
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
