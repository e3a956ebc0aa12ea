package junit_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kvharness/kvharness/harness/junit"
	"github.com/kvharness/kvharness/harness/junit/junittest"
)

// TestEncodeIsValidJUnit: a suite with every outcome (a pass, a failure
// whose body holds markup, a terminal escape and a CDATA end, an error, a
// skip) encodes as JUnit XML the schema accepts and junitparser reads back
// case by case, the counts summed into the root.
func TestEncodeIsValidJUnit(t *testing.T) {
	s := junit.NewSuite("kvharness check evil<&>", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	s.Properties = []junit.Property{{Name: "seed", Value: "1"}}
	s.Add(junit.Case{Name: "bf16/none", Classname: "kvharness.check.x", Time: junit.Seconds(1500 * time.Millisecond)})
	s.Add(junit.Case{Name: "bf16/count", Classname: "kvharness.check.x", Failure: &junit.Result{Message: "padding", Type: "padding",
		Body: "FAIL <x> & \x1b[2J ]]> done\n  replay: kvharness repro 'a b.json'\n"}})
	s.Add(junit.Case{Name: "bf16/sink", Classname: "kvharness.check.x", Error: &junit.Result{Message: "crash", Body: "panic"}})
	s.Add(junit.Case{Name: "bf16/minus1", Classname: "kvharness.check.x", Skipped: &junit.Result{Message: "interrupted"}})
	data, err := junit.Encode("kvharness check", s)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`tests="4" failures="1" errors="1" skipped="1"`, `time="1.500"`, `timestamp="2026-01-02T03:04:05"`,
		"<![CDATA[FAIL <x> & \uFFFD[2J ]]]]><![CDATA[> done\n  replay: kvharness repro 'a b.json'\n]]>", `name="kvharness check evil&lt;&amp;&gt;"`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("encoding lacks %q:\n%s", want, data)
		}
	}
	path := filepath.Join(t.TempDir(), "r.xml")
	os.WriteFile(path, data, 0o644)
	junittest.Validate(t, path)
	if got, want := junittest.Counts(t, path), "kvharness check evil<&>: pass failure error skipped"; len(got) != 1 || got[0] != want {
		t.Errorf("junitparser reads %q, want %q", got, want)
	}
}

// TestSchemaRefusesBrokenFiles: the schema the tests validate against is
// strict where CI's readers are: a case with two outcomes, a count that
// is no number and a case without a name are refused.
func TestSchemaRefusesBrokenFiles(t *testing.T) {
	dir := t.TempDir()
	for name, doc := range map[string]string{
		"two outcomes": `<testsuites><testsuite name="s" tests="1" failures="1" errors="1"><testcase name="c" classname="k" time="0"><failure message="a"/><error message="b"/></testcase></testsuite></testsuites>`,
		"count":        `<testsuites><testsuite name="s" tests="one" failures="0" errors="0"/></testsuites>`,
		"no name":      `<testsuites><testsuite name="s" tests="1" failures="0" errors="0"><testcase classname="k" time="0"/></testsuite></testsuites>`,
	} {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".xml")
		os.WriteFile(path, []byte(doc), 0o644)
		if err := junittest.Lint(t, path); err == nil {
			t.Errorf("the schema accepts a file with %s", name)
		}
	}
}
