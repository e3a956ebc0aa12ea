package python

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/internal/testtier"
)

// kernelsFile is a kernel author's test file, outside the repository: a
// padding-aware numpy store with a mutant, the incident's scatter, and a
// test of each through the kvharness fixture.
const kernelsFile = `
import pytest
from kvharness_sdk import SHM, Geometry, Kernel, Variant


class GoodStore(Kernel):
    name, version, doc = "goodstore", "1.0.0", "padding-aware numpy store"
    backends = (SHM,)
    variants = (Variant("ignore-count", "stores every row of the batch, padded ones too"),)

    def geometry(self, variant, head_dim, page_size):
        return [Geometry("bf16", 2 * head_dim, 2 * head_dim * page_size)]

    def store(self, call):
        n = call.capacity if call.variant == "ignore-count" else call.valid
        call.pool_rows()[call.loc[:n]] = call.rows[:n]


class BadStore(GoodStore):
    name, doc = "badstore", "the incident: pool[loc] = rows"
    variants = ()

    def store(self, call):
        call.pool_rows()[call.loc] = call.rows


def test_good(kvharness):
    kvharness.check(GoodStore, layouts=["bf16"], paddings="all", cases=100)


def test_bad(kvharness):
    kvharness.check(BadStore, layouts=["bf16"], paddings=["none", "count"], cases=100)


def test_mutants(kvharness):
    kvharness.mutants(GoodStore, cases=100)
`

// pytestRun runs Debian's pytest (the python the harness would use) on
// dir with the SDK on the path and its plugin loaded, as an installed
// SDK's entry point loads it.
func pytestRun(t *testing.T, py, dir string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(py, append([]string{"-m", "pytest", "-p", "kvharness_sdk.pytest_plugin", "-q", "-rfs"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PYTHONPATH="+abs(t, "."), "PYTHONDONTWRITEBYTECODE=1", "KVHARNESS_BIN=")
	out, err := cmd.CombinedOutput()
	return string(out), exitCode(err)
}

// needPytest skips t where the harness's python has no pytest.
func needPytest(t *testing.T, py string) {
	t.Helper()
	if out, err := exec.Command(py, "-c", "import pytest").CombinedOutput(); err != nil {
		t.Skipf("%s has no pytest (Debian: python3-pytest): %v %s", py, err, out)
	}
}

// A kernel author's pytest file checks a correct and a buggy Python store
// through the real kvharness binary: each layout × padding is a test of
// its own, the correct store's pass, the incident's fails under count
// padding with kvharness's report (the minimal case, the padding
// violation and a replay line that names the plugin), and the correct
// store's mutant is killed.
func TestPytestPlugin(t *testing.T) {
	t.Parallel()
	py := python(t)
	needPytest(t, py)
	testtier.FullOnly(t, "builds the kvharness command and runs pytest over Python plugins")
	dir := t.TempDir()
	noErr(t, os.WriteFile(filepath.Join(dir, "test_kernels.py"), []byte(kernelsFile), 0o644))
	noErr(t, os.WriteFile(filepath.Join(dir, "pytest.ini"), []byte("[pytest]\n"), 0o644)) // the rootdir, where its cache goes
	out, code := pytestRun(t, py, dir, "--kvharness", kvharnessBinary(t), "--kvharness-backend", "cpu")
	if code != 1 {
		t.Fatalf("pytest: exit %d, want 1 (one failing test)\n%s", code, out)
	}
	for _, want := range []string{
		"1 failed, 6 passed",
		"FAILED test_kernels.py::test_bad[bf16-count]",
		"FAIL badstore · bf16 · padding count · property padding",
		"a padded row (count convention) wrote slot",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("pytest output lacks %q:\n%s", want, out)
		}
	}
	m := regexp.MustCompile(`replay: kvharness repro (\S+) --plugin (\S+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no replay line naming the plugin in the failure:\n%s", out)
	}
	cmd := exec.Command(kvharnessBinary(t), "repro", m[1], "--plugin", m[2])
	if rout, err := cmd.CombinedOutput(); exitCode(err) != 1 || !strings.Contains(string(rout), "FAIL badstore") {
		t.Errorf("the replay line, run: exit %v, want 1\n%s", err, rout)
	}
}

// Without a kvharness binary the fixture's tests skip, saying how to get
// one; --kvharness-required makes that an error.
func TestPytestPluginWithoutBinary(t *testing.T) {
	t.Parallel()
	py := python(t)
	needPytest(t, py)
	quick(t)
	dir := t.TempDir()
	noErr(t, os.WriteFile(filepath.Join(dir, "test_kernels.py"), []byte(kernelsFile), 0o644))
	cmd := func(args ...string) (string, int) {
		c := exec.Command(py, append([]string{"-m", "pytest", "-p", "kvharness_sdk.pytest_plugin", "-q", "-rs"}, args...)...)
		c.Dir = dir
		c.Env = append(os.Environ(), "PYTHONPATH="+abs(t, "."), "PYTHONDONTWRITEBYTECODE=1", "KVHARNESS_BIN=", "PATH=/usr/bin:/bin")
		out, err := c.CombinedOutput()
		return string(out), exitCode(err)
	}
	out, code := cmd()
	if code != 0 || !strings.Contains(out, "7 skipped") || !strings.Contains(out, "no kvharness binary: install it") {
		t.Errorf("pytest without kvharness: exit %d, want 0 with 7 tests skipped saying why\n%s", code, out)
	}
	out, code = cmd("--kvharness-required")
	if code != 1 || !strings.Contains(out, "7 errors") {
		t.Errorf("pytest --kvharness-required without kvharness: exit %d, want 1 with 7 errors\n%s", code, out)
	}
}
