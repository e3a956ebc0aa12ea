package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/kvharness/kvharness/harness/kernels"
	"github.com/kvharness/kvharness/harness/plugin"
)

func init() {
	register("fuzz", "fuzz a plugin with go test -fuzz (needs the kvharness source and Go)", runFuzz)
}

const fuzzExamples = `  kvharness fuzz --plugin fusedstore --time 1m
  kvharness fuzz --plugin ./my-plugin --target FuzzStore --time 10m
  kvharness fuzz --plugin fp8store --mode in-process
`

// runFuzz runs a fuzz target of the source tree against a plugin: a kernel
// kind's (kernels.FuzzTargets, each in its kind's package) or a
// file parser's (in package fuzz). A failing input lands in the package's
// testdata/fuzz/TARGET/ and go test prints the line that replays it.
func runFuzz(ctx context.Context, e *env, args []string) int {
	fs := flags("fuzz", "--plugin P [flags]", fuzzExamples, e)
	pluginArg := fs.String("plugin", "fusedstore", "plugin to fuzz (bundled name, path or command)")
	variant := fs.String("variant", "", "plugin variant")
	target := fs.String("target", "FuzzStore", "fuzz target: "+kernels.FuzzTargets()+", or a file-parser target")
	mode := fs.String("mode", "out-of-process", "out-of-process (the real plugin over gRPC) or in-process (a bundled Go kernel linked in: coverage sees it)")
	fuzztime := fs.Duration("time", 30*time.Second, "how long to fuzz")
	parallel := fs.Int("parallel", 0, "fuzz worker processes (0: one per CPU; use 1 on one GPU)")
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
		return e.errorf("fuzz: --mode %q: want out-of-process or in-process", *mode)
	}
	root, ok := plugin.SourceRoot()
	if !ok {
		return e.errorf("kvharness fuzz runs go test -fuzz in the kvharness source tree; run it from inside a checkout")
	}
	if spec, err := plugin.ResolveSpec(*pluginArg); err == nil && len(spec.Argv) == 1 {
		*pluginArg = spec.Argv[0] // absolute, since go test runs in the target's package
	}
	goArgs := []string{"test", "-trimpath", "-run=^$", "-fuzz=^" + *target + "$", "-fuzztime=" + fuzztime.String()}
	if *parallel > 0 {
		goArgs = append(goArgs, fmt.Sprintf("-parallel=%d", *parallel))
	}
	cmd := exec.CommandContext(ctx, "go", append(goArgs, ".")...)
	cmd.Dir = filepath.Join(root, fuzzPackage(*target))
	cmd.Env = append(os.Environ(), "KVHARNESS_PLUGIN="+*pluginArg, "KVHARNESS_VARIANT="+*variant, "KVHARNESS_FUZZ_MODE="+*mode)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.MultiWriter(e.stdout, &out), io.MultiWriter(e.stderr, &out)
	if err := cmd.Run(); err != nil {
		// go test exits 1 for a failing input and for a build failure alike:
		// only a written crasher is a finding.
		if bytes.Contains(out.Bytes(), []byte("Failing input written to")) {
			return exitViolation
		}
		return e.errorf("go test -fuzz: %v", err)
	}
	return exitPass
}

// fuzzPackage is the directory, from the source root, of the package that
// holds a fuzz target: the kind whose target it is, else package fuzz.
func fuzzPackage(target string) string {
	for _, k := range kernels.All {
		if k.Fuzz == target {
			return filepath.FromSlash(k.FuzzPackage)
		}
	}
	return "fuzz"
}
