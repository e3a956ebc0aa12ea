// Package junittest checks JUnit files in tests: against the schema of
// the format CI systems read (../testdata/junit.xsd) with xmllint, and read
// back by junitparser, a JUnit reader other tools use. .ci/run installs
// both (Debian's libxml2-utils and python3-junitparser); elsewhere a test
// without them skips that part, saying so, outside the full suite.
package junittest

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/internal/testtier"
)

// Schema is the path of the JUnit schema.
func Schema() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "testdata", "junit.xsd")
}

// missing skips the rest of t, or fails it in the full suite (CI installs
// every tool).
func missing(t *testing.T, what string, err error) {
	t.Helper()
	if testtier.Full() {
		t.Fatalf("%s: %v (.ci/run installs it)", what, err)
	}
	t.Skipf("%s: %v; install it to run this check", what, err)
}

// Validate fails t unless xmllint finds path valid against the schema.
func Validate(t *testing.T, path string) {
	t.Helper()
	if err := Lint(t, path); err != nil {
		t.Fatal(err)
	}
}

// Lint is xmllint's verdict on path against the schema: nil when valid.
func Lint(t *testing.T, path string) error {
	t.Helper()
	if _, err := exec.LookPath("xmllint"); err != nil {
		missing(t, "xmllint (Debian: libxml2-utils)", err)
	}
	out, err := exec.Command("xmllint", "--noout", "--schema", Schema(), path).CombinedOutput()
	if err != nil {
		return fmt.Errorf("xmllint: %s is not valid JUnit XML: %v\n%s", path, err, out)
	}
	return nil
}

// Counts reads path with junitparser and returns, per suite, its name and
// its cases' outcomes in order: "pass", "failure", "error" or "skipped".
func Counts(t *testing.T, path string) []string {
	t.Helper()
	py := "/usr/bin/python3"
	script := `
import sys
from junitparser import JUnitXml, Failure, Error, Skipped
for suite in JUnitXml.fromfile(sys.argv[1]):
    kinds = []
    for case in suite:
        r = case.result
        kinds.append("pass" if not r else type(r[0]).__name__.lower())
    print(suite.name + ": " + " ".join(kinds))
`
	out, err := exec.Command(py, "-c", script, path).CombinedOutput()
	if err != nil {
		if strings.Contains(string(out), "No module named") || strings.Contains(err.Error(), "executable file not found") {
			missing(t, "python3-junitparser", err)
		}
		t.Fatalf("junitparser could not read %s: %v\n%s", path, err, out)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}
