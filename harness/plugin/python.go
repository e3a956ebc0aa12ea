package plugin

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// PythonEnv names the environment variable that picks the interpreter of
// Python plugins, overriding discovery.
const PythonEnv = "KVHARNESS_PYTHON"

// PythonModules are what the Python SDK (plugins/python/kvharness_sdk)
// imports before anything else: an interpreter without them cannot even
// print the handshake.
var PythonModules = []string{"grpc", "google.protobuf", "numpy"}

// pythonFallbacks are tried after the name on PATH: the distribution's
// interpreter, where apt installs python3-grpcio and friends, often sits
// behind a pyenv or virtualenv python3 that lacks them.
var pythonFallbacks = []string{"/usr/bin/python3", "/usr/local/bin/python3"}

// pythonProbeTimeout bounds one probe: a cold import of grpc and numpy
// from a slow disk takes seconds, never this long.
const pythonProbeTimeout = 30 * time.Second

var pythonName = regexp.MustCompile(`^python(3(\.[0-9]+)?)?$`)

// lookCommand finds a plugin command's executable: exec.LookPath, except
// that a bare python name ("python3" in a manifest or a --plugin command
// line) becomes a python that can run the SDK (see Python).
func lookCommand(name string) (string, error) {
	if pythonName.MatchString(name) {
		return Python(name)
	}
	return exec.LookPath(name)
}

// Python returns the interpreter to run a Python plugin with, for a bare
// name such as "python3":
//
//  1. $KVHARNESS_PYTHON when set (a path, or a name on PATH), as is: the
//     user chose it;
//  2. otherwise the first of name on PATH, /usr/bin/python3 and
//     /usr/local/bin/python3 that imports grpc, google.protobuf and numpy
//     (PythonModules). The probe result is cached for the process.
//
// An explicit path in a manifest or command line is never replaced.
func Python(name string) (string, error) {
	if env := os.Getenv(PythonEnv); env != "" {
		p, err := exec.LookPath(env)
		if err != nil {
			return "", fmt.Errorf("$%s=%s: %v", PythonEnv, env, err)
		}
		p, err = filepath.Abs(p)
		if err == nil {
			chosen(name, p, "$"+PythonEnv+" names it")
		}
		return p, err
	}
	var tried []string
	for _, c := range pythonCandidates(name) {
		if ok, why := probePython(c); ok {
			because := "the first " + name + " on PATH, and it imports " + strings.Join(PythonModules, ", ")
			if len(tried) > 0 {
				because = "it imports " + strings.Join(PythonModules, ", ") + "; passed over: " + strings.Join(tried, "; ")
			}
			chosen(name, c, because)
			return c, nil
		} else {
			tried = append(tried, fmt.Sprintf("%s (%s)", c, why))
		}
	}
	if len(tried) == 0 {
		return "", fmt.Errorf("no %s on PATH nor in %s; install python3, or set %s", name, strings.Join(pythonFallbacks, ", "), PythonEnv)
	}
	return "", fmt.Errorf("no python that imports %s: tried %s; install them "+
		"(Debian/Ubuntu: apt-get install python3-grpcio python3-protobuf python3-numpy) or set %s to a python that has them",
		strings.Join(PythonModules, ", "), strings.Join(tried, "; "), PythonEnv)
}

// pythonCandidates lists the existing interpreters to probe, in order,
// each once.
func pythonCandidates(name string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		abs, err := filepath.Abs(p)
		if err != nil {
			return
		}
		if st, err := os.Stat(abs); err != nil || st.IsDir() || st.Mode()&0o111 == 0 || seen[abs] {
			return
		}
		seen[abs] = true
		out = append(out, abs)
	}
	if p, err := exec.LookPath(name); err == nil {
		add(p)
	}
	for _, p := range pythonFallbacks {
		add(p)
	}
	return out
}

type probeResult struct {
	ok  bool
	why string
}

var probes sync.Map // interpreter path → probeResult

// probePython reports whether the interpreter imports PythonModules, and
// if not, why (the last line of its error). A success is remembered
// across runs (probeCache): each probe starts the interpreter and imports
// grpc and numpy, a second or two of every run's start on a busy machine.
func probePython(python string) (bool, string) {
	if r, ok := probes.Load(python); ok {
		return r.(probeResult).ok, r.(probeResult).why
	}
	if probedBefore(python) {
		probes.Store(python, probeResult{ok: true})
		return true, ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), pythonProbeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "-c", "import "+strings.Join(PythonModules, ", "))
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	r := probeResult{ok: err == nil}
	if err != nil {
		r.why = lastLine(string(out))
		if r.why == "" {
			r.why = err.Error()
		}
	}
	probes.Store(python, r)
	if r.ok {
		rememberProbe(python)
	}
	return r.ok, r.why
}

// probeCache is the file that remembers the interpreters that imported
// PythonModules, each by its path and its executable's size and time: an
// interpreter replaced is probed again. A failure is not remembered (the
// user may install the modules next).
func probeCache() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "kvharness", "python-probes")
}

// probeKey is how probeCache names an interpreter, "" if it cannot be
// read.
func probeKey(python string) string {
	st, err := os.Stat(python)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%s\t%d\t%d\t%s", python, st.Size(), st.ModTime().UnixNano(), strings.Join(PythonModules, ","))
}

func probedBefore(python string) bool {
	key, file := probeKey(python), probeCache()
	if key == "" || file == "" {
		return false
	}
	data, err := os.ReadFile(file)
	return err == nil && slices.Contains(strings.Split(string(data), "\n"), key)
}

// rememberProbe adds python to probeCache, best effort: a cache that
// cannot be written only costs the next run its probe.
func rememberProbe(python string) {
	key, file := probeKey(python), probeCache()
	if key == "" || file == "" || probedBefore(python) {
		return
	}
	if os.MkdirAll(filepath.Dir(file), 0o755) != nil {
		return
	}
	f, err := os.OpenFile(file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	f.WriteString(key + "\n") // one short append: whole lines, even from two processes at once
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// PythonChosen, when set, is told once per name which interpreter runs
// Python plugins and why (the kvharness command says so on stderr: the
// python first on PATH is often not the one that has the SDK's modules).
var PythonChosen func(name, path, why string)

var told sync.Map // name → path told to PythonChosen

func chosen(name, path, why string) {
	if PythonChosen == nil {
		return
	}
	if prev, loaded := told.LoadOrStore(name, path); loaded && prev == path {
		return
	}
	PythonChosen(name, path, why)
}
