package python

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kvharness/kvharness/harness/kernels/store"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/protocol/fdpass"
	"github.com/kvharness/kvharness/internal/testtier"
)

// run runs a command and fails the test with its output if it fails.
func run(t *testing.T, dir string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// copyTree copies the regular files under src (skipping caches and build
// output) to dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() && (d.Name() == "__pycache__" || d.Name() == "build" || strings.HasSuffix(d.Name(), ".egg-info")) {
			return filepath.SkipDir
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	noErr(t, err)
}

// The SDK installs outside the repository: pip installs plugins/python
// (its pyproject.toml) into a virtual environment, a plugin copied to a
// folder of its own imports it from there, and its manifest names that
// environment's python. The harness runs it as it runs the shipped ones.
func TestInstalledOutsideTheTree(t *testing.T) {
	t.Parallel()
	py := python(t)
	testtier.FullOnly(t, "makes a virtual environment and runs pip")
	tmp := t.TempDir()
	venv := filepath.Join(tmp, "venv")
	if out, err := exec.Command(py, "-m", "venv", "--system-site-packages", venv).CombinedOutput(); err != nil {
		t.Skipf("%s cannot make a virtual environment (install python3-venv): %v\n%s", py, err, out)
	}
	// pip builds a source tree in place: build a copy, not the repository.
	src := filepath.Join(tmp, "src")
	for _, f := range []string{"pyproject.toml", "README.md"} {
		b, err := os.ReadFile(f)
		noErr(t, err)
		os.MkdirAll(src, 0o755)
		os.WriteFile(filepath.Join(src, f), b, 0o644)
	}
	copyTree(t, "kvharness_sdk", filepath.Join(src, "kvharness_sdk"))
	copyTree(t, "build_backend", filepath.Join(src, "build_backend"))
	vpy := filepath.Join(venv, "bin", "python")
	// With pip's build isolation, as a user runs it, and no package index:
	// the SDK's own build backend needs nothing from the network.
	run(t, tmp, vpy, "-m", "pip", "install", "--no-index", "--quiet", src)
	eps := run(t, tmp, vpy, "-B", "-c", "import importlib.metadata as m; print([e.value for e in m.entry_points(group='pytest11')])")
	if !strings.Contains(eps, "kvharness_sdk.pytest_plugin") {
		t.Errorf("the installed package registers no pytest plugin: pytest11 entry points %s", eps)
	}
	where := run(t, tmp, vpy, "-B", "-c", "import kvharness_sdk; print(kvharness_sdk.__file__, kvharness_sdk.__version__)")
	if !strings.HasPrefix(where, venv) {
		t.Fatalf("kvharness_sdk imported from %s, not the environment", where)
	}

	mine := filepath.Join(tmp, "mystore")
	os.MkdirAll(mine, 0o755)
	b, err := os.ReadFile(filepath.Join("torchscatter", "plugin.py"))
	noErr(t, err)
	// The copy's sys.path line points at a folder without the SDK: the
	// import can only resolve to the installed package.
	os.WriteFile(filepath.Join(mine, "plugin.py"), b, 0o644)
	manifest := `{"name": "mystore", "command": ["../venv/bin/python", "plugin.py"], "mtls": false}`
	os.WriteFile(filepath.Join(mine, "kvharness-plugin.json"), []byte(manifest), 0o644)

	spec, err := plugin.ResolveSpec(filepath.Join(mine, "kvharness-plugin.json"))
	noErr(t, err)
	if spec.Argv[0] != vpy {
		t.Errorf("the manifest's python resolved to %s, want %s", spec.Argv[0], vpy)
	}
	dir := runDir(t)
	p, err := plugin.StartSpec(context.Background(), spec, plugin.Options{Dir: dir, NoMTLS: true})
	noErr(t, err)
	defer p.Close()
	for _, pad := range []store.Padding{store.PadNone, store.PadCount} {
		v := suite(t, p, dir, pad)
		if caught := v.Outcome.Failure != nil; caught != (pad == store.PadCount) || len(v.Outcome.Faults) > 0 {
			t.Errorf("%s: caught %v, faults %v; the installed SDK should run the copy as the tree's", pad, caught, v.Outcome.Faults)
		}
	}
}

// The SDK receives an arena's descriptor from the harness's own fd
// socket (harness/protocol/fdpass): here a pipe, whose far end the test
// then writes.
func TestFDPassFromTheHarness(t *testing.T) {
	py := slowPython(t)
	r, w, err := os.Pipe()
	noErr(t, err)
	defer r.Close()
	defer w.Close()
	srv, err := fdpass.Serve("", func() (int, error) {
		return syscall.Dup(int(r.Fd()))
	})
	noErr(t, err)
	defer srv.Close()
	if _, err := w.Write([]byte("arena")); err != nil {
		t.Fatal(err)
	}
	prog := `import os, sys
sys.path.insert(0, sys.argv[1])
from kvharness_sdk import fdpass
sys.stdin.readline()
try:
    fd = fdpass.receive(sys.argv[2])
    print(os.read(fd, 5).decode())
except fdpass.FDPassError as e:
    print(e)`
	// The socket serves only the plugin an arena is granted to: python is
	// started as a plugin is, in a process group of its own, and asks
	// once it is granted (or not).
	ask := func(grant bool) string {
		cmd := exec.Command(py, "-B", "-c", prog, abs(t, "."), srv.Path)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		in, _ := cmd.StdinPipe()
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		noErr(t, cmd.Start())
		if grant {
			fdpass.PluginStarted(cmd.Process.Pid)
			defer fdpass.PluginExited(cmd.Process.Pid)
			fdpass.Grant(srv.Path, cmd.Process.Pid)
		}
		in.Write([]byte("go\n"))
		cmd.Wait()
		return strings.TrimSpace(out.String())
	}
	if out := ask(true); out != "arena" {
		t.Errorf("read %q through the received descriptor; want arena", out)
	}
	if out := ask(false); !strings.Contains(out, "the harness refused the arena to this process") {
		t.Errorf("a process the arena was not granted to: %q; want it refused", out)
	}
}

// The Python unit tests (plugins/python/tests) pass under the python the
// harness would run plugins with.
func TestPythonUnitTests(t *testing.T) {
	t.Parallel()
	py := python(t)
	out := run(t, ".", py, "-B", "-m", "unittest", "discover", "-s", "tests", "-t", "tests")
	t.Log(out)
}
