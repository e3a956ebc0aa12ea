package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kvharness/kvharness/harness/junit/junittest"
	"github.com/kvharness/kvharness/harness/mutants"
	"github.com/kvharness/kvharness/harness/oracle"
)

// TestJUnitOfAFailingCheck: check --junit writes a test case per row, the
// failing rows' reports (with their replay lines) as failure bodies, and
// the file is JUnit XML CI systems read.
func TestJUnitOfAFailingCheck(t *testing.T) {
	quick(t)
	file := filepath.Join(t.TempDir(), "check.xml")
	code, out, errOut := runCLI(t, "check", "--plugin", "bf16scatter", "--cases", "20", "--backend", "cpu", "--layout", "bf16",
		"--results", t.TempDir(), "--junit", file)
	if code != exitViolation {
		t.Fatalf("check bf16scatter: exit %d, want 1\n%s%s", code, out, errOut)
	}
	junittest.Validate(t, file)
	if got, want := junittest.Counts(t, file), []string{"kvharness check bf16scatter: pass failure failure failure"}; strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("cases %q, want %q (none passes; count, sink and minus1 fail)", got, want)
	}
	data, _ := os.ReadFile(file)
	for _, want := range []string{`name="bf16/count"`, `type="padding"`, "FAIL bf16scatter · bf16 · padding count · property padding", "replay: kvharness repro ", `name="seed" value="1"`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("the JUnit file lacks %q:\n%s", want, data)
		}
	}
}

// TestJUnitOfMutants: a killed mutant and a passing control are passes, a
// surviving mutant and a failing control failures, a subject that could
// not run an error; the file is valid JUnit.
func TestJUnitOfMutants(t *testing.T) {
	rs := []mutants.Result{
		{Subject: mutants.Subject{Plugin: "/x/kvharness-plugin.json", Name: "mine", Kernel: "store"}},
		{Subject: mutants.Subject{Plugin: "mine", Name: "mine", Kernel: "store", Variant: "ignore-count", Mutant: true}, Killed: true, Property: oracle.Padding, Cases: 20, ToKill: time.Second},
		{Subject: mutants.Subject{Plugin: "mine", Name: "mine", Kernel: "store", Variant: "lazy", Mutant: true}, Cases: 1000},
		{Subject: mutants.Subject{Plugin: "mine", Name: "mine", Kernel: "read", Variant: "ctl"}, Killed: true, Property: oracle.Value},
		{Subject: mutants.Subject{Plugin: "mine", Name: "mine", Kernel: "store", Variant: "boom", Mutant: true}, Err: os.ErrClosed},
	}
	file := filepath.Join(t.TempDir(), "m.xml")
	if err := writeJUnit(file, "kvharness mutants", mutantsSuite(rs, time.Now())); err != nil {
		t.Fatal(err)
	}
	junittest.Validate(t, file)
	if got, want := junittest.Counts(t, file), "kvharness mutants: pass pass failure failure error"; len(got) != 1 || got[0] != want {
		t.Errorf("cases %q, want %q", got, want)
	}
	data, _ := os.ReadFile(file)
	if strings.Contains(string(data), "kvharness-plugin") || !strings.Contains(string(data), `name="mine/none"`) {
		t.Errorf("cases named after the manifest's file, not the plugin's own name:\n%s", data)
	}
}

// TestJUnitFlagRefusesAFolder: --junit names a file; a folder or a file in
// a folder that cannot be made is refused before anything runs.
func TestJUnitFlagRefusesAFolder(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "plain"), nil, 0o644)
	for _, tc := range []struct{ path, want string }{
		{dir, "is a folder"},
		{filepath.Join(dir, "plain", "x.xml"), "is a file, not a folder"},
	} {
		for _, cmd := range [][]string{{"check", "--plugin", "fusedstore"}, {"mutants"}, {"fuzz"}} {
			code, out, errOut := runCLI(t, append(cmd, "--junit", tc.path)...)
			if code != exitError || out != "" || !strings.Contains(errOut, tc.want) || strings.Count(errOut, "\n") != 1 {
				t.Errorf("%s --junit %s: exit %d, stdout %q, stderr %q; want one line saying %q", cmd[0], tc.path, code, out, errOut, tc.want)
			}
		}
	}
}
