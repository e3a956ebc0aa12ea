package plugin

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// fakePython writes an executable script that stands in for an
// interpreter: one that imports the SDK's modules (exit 0) or one that
// lacks them (a ModuleNotFoundError and exit 1).
func fakePython(t *testing.T, dir string, works bool) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	body := "#!/bin/sh\nexit 0\n"
	if !works {
		body = "#!/bin/sh\necho \"ModuleNotFoundError: No module named 'grpc'\" >&2\nexit 1\n"
	}
	path := filepath.Join(dir, "python3")
	if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestPythonNames(t *testing.T) {
	for name, want := range map[string]bool{
		"python": true, "python3": true, "python3.12": true,
		"python2": false, "/usr/bin/python3": false, "pythonista": false, "sh": false,
	} {
		if got := pythonName.MatchString(name); got != want {
			t.Errorf("pythonName(%q) = %v, want %v", name, got, want)
		}
	}
}

// A python on PATH without grpc is skipped for one that has it, as on a
// machine whose pyenv python3 shadows Debian's.
func TestPythonSkipsInterpreterWithoutModules(t *testing.T) {
	dir := t.TempDir()
	bad := fakePython(t, filepath.Join(dir, "path"), false)
	good := fakePython(t, filepath.Join(dir, "system"), true)
	t.Setenv(PythonEnv, "")
	t.Setenv("PATH", filepath.Dir(bad))
	defer func(old []string) { pythonFallbacks = old }(pythonFallbacks)
	pythonFallbacks = []string{good}

	got, err := lookCommand("python3")
	if err != nil || got != good {
		t.Fatalf("lookCommand(python3) = %q, %v; want %q", got, err, good)
	}

	pythonFallbacks = nil
	_, err = Python("python3")
	if err == nil || !strings.Contains(err.Error(), "No module named 'grpc'") ||
		!strings.Contains(err.Error(), "apt-get install python3-grpcio") || !strings.Contains(err.Error(), PythonEnv) {
		t.Errorf("no usable python: err = %v; want the probe's reason and how to fix it", err)
	}
}

// $KVHARNESS_PYTHON wins, unprobed; an explicit interpreter path in a
// command is never replaced; other commands are looked up as before.
func TestPythonOverride(t *testing.T) {
	dir := t.TempDir()
	chosen := fakePython(t, filepath.Join(dir, "chosen"), false)
	t.Setenv(PythonEnv, chosen)
	if got, err := lookCommand("python3"); err != nil || got != chosen {
		t.Errorf("with %s=%s: %q, %v", PythonEnv, chosen, got, err)
	}
	spec, err := ResolveSpec("python3 " + chosen)
	if err != nil || spec.Argv[0] != chosen {
		t.Errorf("command line: %+v, %v", spec, err)
	}
	other := fakePython(t, filepath.Join(dir, "other"), true)
	spec, err = ResolveSpec(other + " script.py")
	if err != nil || spec.Argv[0] != other {
		t.Errorf("explicit interpreter path replaced: %+v, %v", spec, err)
	}
	t.Setenv(PythonEnv, filepath.Join(dir, "missing"))
	if _, err := ResolveSpec("python3 x.py"); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), PythonEnv) {
		t.Errorf("missing $%s: %v", PythonEnv, err)
	}
}

// A manifest's "python3" goes through the same resolution, and a
// manifest named by a relative path runs its script from its own folder.
func TestManifestPython(t *testing.T) {
	dir := t.TempDir()
	chosen := fakePython(t, filepath.Join(dir, "bin"), true)
	t.Setenv(PythonEnv, chosen)
	plug := filepath.Join(dir, "plug")
	os.MkdirAll(plug, 0o755)
	os.WriteFile(filepath.Join(plug, "plugin.py"), []byte("\n"), 0o644)
	os.WriteFile(filepath.Join(plug, "kvharness-plugin.json"), []byte(`{"name": "p", "command": ["python3", "plugin.py"]}`), 0o644)
	t.Chdir(dir)
	spec, err := ResolveSpec(filepath.Join("plug", "kvharness-plugin.json"))
	if err != nil {
		t.Fatal(err)
	}
	if spec.Argv[0] != chosen || spec.Argv[1] != filepath.Join(plug, "plugin.py") || spec.Dir != plug {
		t.Errorf("spec %+v; want %s running %s in %s", spec, chosen, filepath.Join(plug, "plugin.py"), plug)
	}
}

// TestPythonChoiceIsTold: the interpreter chosen for a bare python3, and
// why, is told once per name; with KVHARNESS_PYTHON the reason names it.
func TestPythonChoiceIsTold(t *testing.T) {
	py, err := Python("python3")
	if err != nil {
		t.Skipf("no python for the SDK here: %v", err)
	}
	defer func() { PythonChosen = nil; told = sync.Map{} }()
	told = sync.Map{}
	var calls []string
	PythonChosen = func(name, path, why string) { calls = append(calls, name+" "+path+": "+why) }
	Python("python3")
	Python("python3")
	if len(calls) != 1 || !strings.Contains(calls[0], py) || !strings.Contains(calls[0], "imports grpc") {
		t.Errorf("told %q; want once, naming %s and the modules it imports", calls, py)
	}
	t.Setenv(PythonEnv, py)
	told = sync.Map{}
	calls = nil
	Python("python3")
	if len(calls) != 1 || !strings.Contains(calls[0], "$KVHARNESS_PYTHON names it") {
		t.Errorf("with %s set, told %q", PythonEnv, calls)
	}
}

// TestProbeRemembered: an interpreter that imported the SDK's modules is
// remembered across runs (a file in the user cache), by its path, size
// and time; one that failed is not.
func TestProbeRemembered(t *testing.T) {
	py, err := Python("python3")
	if err != nil {
		t.Skipf("no python for the SDK here: %v", err)
	}
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	if probedBefore(py) {
		t.Fatal("remembered in an empty cache")
	}
	rememberProbe(py)
	rememberProbe(py)
	if !probedBefore(py) {
		t.Errorf("%s not remembered", py)
	}
	data, _ := os.ReadFile(probeCache())
	if n := strings.Count(string(data), "\n"); n != 1 {
		t.Errorf("the cache holds %d lines, want 1:\n%s", n, data)
	}
	if probedBefore("/bin/sh") {
		t.Error("an interpreter never probed is remembered")
	}
}
