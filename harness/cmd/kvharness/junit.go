package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/kvharness/kvharness/harness/junit"
	"github.com/kvharness/kvharness/harness/kernels/read"
	"github.com/kvharness/kvharness/harness/mutants"
	"github.com/kvharness/kvharness/harness/report"
)

// junitUsage is --junit's help, the same for check, mutants and fuzz.
const junitUsage = "also write the results as JUnit XML to this file, for CI test reports: a test case per row (mutants: per control or mutant; fuzz: per target), a failure's report as its body"

// checkJUnitFile refuses a --junit whose folder cannot be written, before
// anything runs.
func checkJUnitFile(path string) error {
	if path == "" {
		return nil
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("--junit %s is a folder; give a file, as in --junit %s", path, filepath.Join(path, "kvharness.xml"))
	}
	if err := writableFolder(filepath.Dir(path)); err != nil {
		return fmt.Errorf("--junit %s: %v; give a file in a folder you can write", path, err)
	}
	return nil
}

// writeJUnit writes the suites to path, whole or not at all ("" writes
// nothing).
func writeJUnit(path, name string, suites ...*junit.Suite) error {
	if path == "" {
		return nil
	}
	data, err := junit.Encode(name, suites...)
	if err != nil {
		return fmt.Errorf("--junit %s: %w", path, err)
	}
	if err := report.WriteFileAtomic(path, data, 0o644); err != nil {
		return fmt.Errorf("--junit %s: %w", path, err)
	}
	return nil
}

// checkSuite is a check run as a JUnit suite: a case per row, a failing
// row's whole report (and its replay line) as its failure's body, a row
// the plugin's fault left unjudged as an error, one an interrupt left
// unjudged as skipped.
func checkSuite(run *report.Run, start time.Time) *junit.Suite {
	h := run.Header
	s := junit.NewSuite("kvharness check "+h.Plugin+variantSuffix(h.Variant), start)
	s.Time = junit.Seconds(time.Since(start))
	s.Properties = []junit.Property{{Name: "plugin", Value: h.PluginArg}, {Name: "kernel", Value: string(run.Kernel)},
		{Name: "variant", Value: h.VariantOrNone()}, {Name: "backend", Value: h.Backend},
		{Name: "seed", Value: fmt.Sprint(h.Seed)}, {Name: "cases", Value: fmt.Sprint(h.Cases)}}
	class := "kvharness.check." + h.Plugin
	for _, row := range run.Rows {
		c := junit.Case{Name: rowName(row), Classname: class, Time: junit.Seconds(row.Elapsed)}
		switch {
		case row.Failure != nil:
			var b bytes.Buffer
			report.WriteFailure(&b, row.Failure)
			c.Failure = &junit.Result{Message: strings.Join(append(slices.Clone(row.Failure.Headline), "property "+string(row.Failure.Property)), " · "),
				Type: string(row.Failure.Property), Body: b.String()}
		case len(row.Cells) > 0 && row.Cells[0] == report.Stopped:
			c.Skipped = &junit.Result{Message: "interrupted: the row was not judged"}
		case !row.Passed:
			msg := "the plugin faulted: the row's properties were not judged"
			if run.Err != nil {
				msg = run.Err.Error()
			}
			c.Error = &junit.Result{Message: oneLine(msg), Type: "fault", Body: msg}
		}
		for _, f := range row.Faults {
			c.SystemOut += fmt.Sprintf("plugin fault, survived (plugin restarted): %v\n  case: %v\n", f.Err, f.Case)
		}
		s.Add(c)
	}
	return s
}

// mutantsSuite is a mutants run as a JUnit suite: a case per control and
// mutant; a mutant that survived or a control that failed is a failure, a
// subject that could not run an error.
func mutantsSuite(results []mutants.Result, start time.Time) *junit.Suite {
	s := junit.NewSuite("kvharness mutants", start)
	s.Time = junit.Seconds(time.Since(start))
	for _, r := range results {
		c := junit.Case{Name: r.Shown() + "/" + orNone(r.Variant), Classname: "kvharness.mutants." + r.Shown() + "." + string(r.Kernel),
			Time: junit.Seconds(r.ToKill), SystemOut: subjectLine(r) + "\n"}
		switch {
		case r.Err != nil:
			c.Error = &junit.Result{Message: oneLine(r.Err.Error()), Type: "error", Body: r.Err.Error()}
		case r.Mutant && !r.Killed:
			c.Failure = &junit.Result{Message: fmt.Sprintf("mutant survived %d cases: no property caught it", r.Cases), Type: "survived",
				Body: fmt.Sprintf("%s\n%s\n", r.Doc, subjectLine(r))}
		case !r.Mutant && r.Killed:
			c.Failure = &junit.Result{Message: fmt.Sprintf("control failed %s on a correct kernel", r.Property), Type: string(r.Property),
				Body: fmt.Sprintf("%s\ncase: %v\n", subjectLine(r), r.Case)}
		}
		s.Add(c)
	}
	return s
}

// composeSuite is a composed check as a JUnit suite: a case per padding,
// a failing row's report (minimal case, findings, blame, replay line) as
// its failure's body, a plugin fault as an error.
func composeSuite(c *read.Composed, replay read.ReplayFunc, start time.Time) *junit.Suite {
	s := junit.NewSuite(fmt.Sprintf("kvharness check --writer %s --reader %s", c.Writer, c.Reader), start)
	s.Time = junit.Seconds(time.Since(start))
	s.Properties = []junit.Property{{Name: "writer", Value: c.Writer.Arg}, {Name: "reader", Value: c.Reader.Arg},
		{Name: "writer-layout", Value: c.Writer.Layout.Name}, {Name: "reader-layout", Value: c.Reader.Layout.Name}}
	class := "kvharness.compose." + c.Writer.Arg + "." + c.Reader.Arg
	for i, r := range c.Rows {
		jc := junit.Case{Name: fmt.Sprintf("%s/%s", c.Writer.Layout.Name, r.Padding), Classname: class}
		switch {
		case r.Failure != nil:
			jc.Failure = &junit.Result{Message: c.FailureLine(i), Type: "compose", Body: c.FailureText(i, replay)}
		case r.Fault != nil:
			jc.Error = &junit.Result{Message: oneLine(r.Fault.Error()), Type: "fault",
				Body: r.Fault.Error() + "\nreplay: " + replay(r.Padding, r.FaultSeed) + "\n"}
		}
		s.Add(jc)
	}
	return s
}

func orNone(v string) string {
	if v == "" {
		return "none"
	}
	return v
}

// fuzzCase is one fuzz target's run as a JUnit case: a finding is a
// failure whose body is go test's account of it, a run that could not
// fuzz (a build failure) an error.
func fuzzCase(target, plugin string, code int, elapsed time.Duration, out string) junit.Case {
	c := junit.Case{Name: target, Classname: "kvharness.fuzz." + plugin, Time: junit.Seconds(elapsed)}
	switch code {
	case exitPass:
	case exitViolation:
		c.Failure = &junit.Result{Message: finding([]byte(out)), Type: "crasher", Body: failingPart(out)}
	default:
		c.Error = &junit.Result{Message: "go test -fuzz did not run the target", Type: "error", Body: tail(out, 64<<10)}
	}
	return c
}

// failingPart is go test's output from its first failure on.
func failingPart(out string) string {
	for _, mark := range []string{"failure while testing seed corpus entry", "--- FAIL"} {
		if i := strings.Index(out, mark); i >= 0 {
			return tail(out[i:], 64<<10)
		}
	}
	return tail(out, 64<<10)
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
