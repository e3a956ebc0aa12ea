package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/kvharness/kvharness/harness/fuzzing"
	"github.com/kvharness/kvharness/harness/internal/gobuild"
	"github.com/kvharness/kvharness/harness/junit"
	"github.com/kvharness/kvharness/harness/kernels"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/shard"
)

const fuzzExamples = `  kvharness fuzz --plugin fusedstore --time 1m
  kvharness fuzz --plugin ./my-plugin --target FuzzStore --time 10m
  kvharness fuzz --plugin fp8store --lane in-process
  kvharness fuzz --plugin fusedstore --target all --shard 2/3 --time 5m   # this machine's third of the kinds' targets
  kvharness fuzz --plugin ./mystore/kvharness-plugin.json --junit fuzz.xml
`

// runFuzz runs a fuzz target of the source tree against a plugin: a kernel
// kind's (kernels.FuzzTargets: out of process in the kind's fuzz folder,
// in process in the kind's package) or a file parser's (in package fuzz). A failing input lands in the package's
// testdata/fuzz/TARGET/ and go test prints the line that replays it.
func runFuzz(ctx context.Context, e *env, args []string) int {
	fs := flags("fuzz", "--plugin P [flags]", fuzzExamples, e)
	pluginArg := fs.String("plugin", "fusedstore", "plugin to fuzz: a bundled name, a binary, a manifest (.json) or a command line, as check takes it")
	variant := fs.String("variant", "", "plugin variant")
	target := fs.String("target", "FuzzStore", "fuzz target: "+kernels.FuzzTargets()+", or a file-parser target; several as a comma list, or all: every kind's, one after another")
	shardArg := fs.String("shard", "", "fuzz part i of n of the targets, as 2/3: the targets sorted by name, every n-th from the i-th, each for --time (go test -fuzz takes no seed, so a target is what splits deterministically)")
	mode := fs.String("lane", "out-of-process", "out-of-process (the real plugin over gRPC) or in-process (a bundled Go kernel linked in: coverage sees it)")
	fuzztime := fs.Duration("time", 30*time.Second, "how long to fuzz")
	parallel := fs.Int("parallel", 0, "fuzz worker processes (0: one per CPU; use 1 on one GPU)")
	junitFile := fs.String("junit", "", junitUsage)
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if err := noArgs(fs); err != nil {
		return e.errorf("%v", err)
	}
	if *parallel < 0 {
		return e.errorf("fuzz: --parallel %d: want 0 (one per CPU) or more", *parallel)
	}
	if !oneOf(*mode, "out-of-process", "in-process") {
		return e.errorf("fuzz: --lane %q: want out-of-process or in-process", *mode)
	}
	targets, err := fuzzTargets(*target, *shardArg)
	if err != nil {
		return e.errorf("fuzz: %v", err)
	}
	root, ok := plugin.SourceRoot()
	if !ok {
		return e.errorf("kvharness fuzz runs go test -fuzz in a kvharness source tree, and this kvharness was not built from one at hand; give --plugin-source DIR (a checkout)")
	}
	if err := checkJUnitFile(*junitFile); err != nil {
		return e.errorf("fuzz: %v", err)
	}
	shown := *pluginArg
	if *mode == "out-of-process" {
		abs, name, err := fuzzPlugin(*pluginArg)
		if err != nil {
			return e.errorf("fuzz: %v", err)
		}
		*pluginArg, shown = abs, name
	}
	// The fuzz test binaries are built with -trimpath, which records no
	// source tree: they are told the one fuzzed, never left to guess.
	env := append(os.Environ(), gobuild.SourceEnv+"="+root, "KVHARNESS_PLUGIN="+*pluginArg, "KVHARNESS_VARIANT="+*variant, "KVHARNESS_FUZZ_MODE="+*mode)
	code := exitPass
	began := time.Now()
	suite := junit.NewSuite("kvharness fuzz "+shown, began)
	suite.Properties = []junit.Property{{Name: "plugin", Value: *pluginArg}, {Name: "lane", Value: *mode}, {Name: "time", Value: fuzztime.String()}}
	for _, t := range targets {
		dir := fuzzPackage(t, *mode)
		fmt.Fprintf(e.stderr, "kvharness fuzz: %s for %v in ./%s (go test builds its test binary first: minutes the first time)\n", t, *fuzztime,
			strings.TrimPrefix(filepath.ToSlash(dir), "./"))
		goArgs := []string{"test", "-trimpath", "-run=^$", "-fuzz=^" + t + "$", "-fuzztime=" + fuzztime.String()}
		if *parallel > 0 {
			goArgs = append(goArgs, fmt.Sprintf("-parallel=%d", *parallel))
		}
		start := time.Now()
		c, out := fuzzOne(ctx, e, t, filepath.Join(root, dir), goArgs, env)
		suite.Add(fuzzCase(t, shown, c, time.Since(start), out))
		suite.Time = junit.Seconds(time.Since(began))
		if err := writeJUnit(*junitFile, "kvharness fuzz", suite); err != nil {
			return e.errorf("%v", err)
		}
		switch {
		case c == exitPass:
			fmt.Fprintf(e.stderr, "kvharness fuzz: %s: no failure in %v of fuzzing (%v in all)\n", t, *fuzztime, time.Since(start).Round(time.Second))
		case c == exitViolation:
			code = c // a finding; the shard's other targets still run
		default:
			return c
		}
	}
	return code
}

// fuzzPlugin is --plugin as go test, which runs in the target's package
// folder, must see it: resolved here, where the user stands (a bundled
// plugin built, a path, manifest or command line checked), and given as
// an absolute path; a command line gets its files' absolute paths.
// name is the plugin's own name (a manifest's), for reports.
func fuzzPlugin(arg string) (abs, name string, err error) {
	spec, err := resolve(arg)
	switch {
	case err != nil:
		return "", "", err
	case strings.HasSuffix(arg, ".json"):
		abs, err = filepath.Abs(arg)
	case strings.IndexFunc(arg, unicode.IsSpace) >= 0:
		abs, err = commandLine(spec.Argv)
	default:
		abs = spec.Argv[0]
	}
	return abs, spec.Name, err
}

// commandLine writes argv back as a command line plugin.ResolveSpec
// reads, each file an absolute path.
func commandLine(argv []string) (string, error) {
	words := make([]string, len(argv))
	for i, a := range argv {
		if st, err := os.Stat(a); err == nil && st.Mode().IsRegular() {
			if abs, err := filepath.Abs(a); err == nil {
				a = abs
			}
		}
		switch {
		case !strings.ContainsAny(a, " \t'\""):
		case !strings.Contains(a, `"`):
			a = `"` + a + `"`
		case !strings.Contains(a, "'"):
			a = "'" + a + "'"
		default:
			return "", fmt.Errorf("plugin command word %q holds both quote characters; write a manifest for it", a)
		}
		words[i] = a
	}
	return strings.Join(words, " "), nil
}

// fuzzOne runs one go test -fuzz in dir, and returns its exit status and
// output.
func fuzzOne(ctx context.Context, e *env, target, dir string, goArgs, env []string) (int, string) {
	cmd := exec.CommandContext(ctx, "go", append(goArgs, ".")...)
	cmd.Dir, cmd.Env = dir, env
	var out bytes.Buffer
	quiet := &silence{last: time.Now()}
	cmd.Stdout, cmd.Stderr = io.MultiWriter(e.stdout, &out, quiet), io.MultiWriter(e.stderr, &out, quiet)
	stop := quiet.heartbeat(e.stderr, "kvharness fuzz: "+target+": go test is still building or starting")
	err := cmd.Run()
	stop()
	if err != nil {
		if found := finding(out.Bytes()); found != "" {
			fmt.Fprintf(e.stderr, "kvharness fuzz: %s, in %s (exit 1: a violation)\n", found, dir)
			return exitViolation, out.String()
		}
		if fuzzing.DeadlineRace(out.Bytes()) {
			fmt.Fprintf(e.stderr, "kvharness fuzz: %s: no input failed; go test called the end of -fuzztime a failure (a race in Go 1.26's fuzz coordinator, golang/go#75804, fixed in Go 1.27)\n", target)
			return exitPass, out.String()
		}
		return e.errorf("go test -fuzz (%s): %v", filepath.Base(dir), err), out.String()
	}
	return exitPass, out.String()
}

// seedFailed is go test's line for a seed (f.Add, or a corpus file) that
// fails before any new input is made.
var seedFailed = regexp.MustCompile(`failure while testing seed corpus entry: (Fuzz\w+/\S+)`)

// finding says what go test -fuzz found in its output, or "" for none. go
// test exits 1 for a failing input and for a build failure or a setup
// error alike: a finding is a new input it wrote, or a seed of the corpus
// that failed (which it writes nowhere: the seed is the crasher).
func finding(out []byte) string {
	if i := bytes.Index(out, []byte("Failing input written to ")); i >= 0 {
		line, _, _ := bytes.Cut(out[i:], []byte("\n"))
		return "the crasher is " + strings.TrimPrefix(string(line), "Failing input written to ")
	}
	if m := seedFailed.FindSubmatch(out); m != nil {
		return fmt.Sprintf("seed %s of the corpus fails (go test -run='^%s$' replays it)", m[1], regexp.QuoteMeta(string(m[1])))
	}
	return ""
}

// fuzzTargets is what --target and --shard ask for: the targets named (all:
// every kind's), the shard's part of them.
func fuzzTargets(target, shardArg string) ([]string, error) {
	spec, err := shard.Parse(shardArg)
	if err != nil {
		return nil, fmt.Errorf("--%w", err)
	}
	var names []string
	if target == "all" {
		names = kernels.FuzzTargetNames()
	} else {
		for _, t := range strings.Split(target, ",") {
			if t = strings.TrimSpace(t); t == "" || !strings.HasPrefix(t, "Fuzz") {
				return nil, fmt.Errorf("--target %q: want fuzz targets (%s, or a file parser's), a comma list of them, or all", target, kernels.FuzzTargets())
			}
			names = append(names, t)
		}
	}
	owned, err := shard.Select(spec, names, func(s string) string { return s })
	if err != nil {
		return nil, fmt.Errorf("--target %s: %w", target, err)
	}
	if len(owned) == 0 {
		return nil, fmt.Errorf("--shard %s owns none of the %d targets of --target %s; run fewer shards, or give --target all", spec, len(names), target)
	}
	return owned, nil
}

// fuzzPackage is the directory, from the source root, of the package that
// holds a fuzz target in a mode: a kind's out-of-process lane (its fuzz
// folder, package remote) when it has one and the plugin runs out of
// process, else the kind's package; a file parser's target is package
// fuzz's.
func fuzzPackage(target, mode string) string {
	for _, k := range kernels.All {
		if k.Fuzz.Name != target {
			continue
		}
		if k.Fuzz.Checker != nil && mode == "out-of-process" {
			return filepath.FromSlash(k.Fuzz.Package + "/fuzz")
		}
		return filepath.FromSlash(k.Fuzz.Package)
	}
	return "fuzz"
}

// silence notes when go test last wrote, for a heartbeat while it is
// silent (its build, the plugin's start): go test -fuzz itself reports
// every 3 s once it fuzzes.
type silence struct {
	mu   sync.Mutex
	last time.Time
}

func (s *silence) Write(p []byte) (int, error) {
	s.mu.Lock()
	s.last = time.Now()
	s.mu.Unlock()
	return len(p), nil
}

// heartbeat writes what, with the time elapsed, to w whenever nothing has
// been written for heartbeatEvery, until the returned stop is called.
func (s *silence) heartbeat(w io.Writer, what string) (stop func()) {
	start, done, ended := time.Now(), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		t := time.NewTicker(min(heartbeatEvery/4, time.Second))
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				s.mu.Lock()
				if now.Sub(s.last) >= heartbeatEvery {
					fmt.Fprintf(w, "  … %s, %v elapsed\n", what, now.Sub(start).Round(time.Second))
					s.last = now
				}
				s.mu.Unlock()
			}
		}
	}()
	return func() { close(done); <-ended }
}
