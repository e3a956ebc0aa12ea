package main

import (
	"context"
	"errors"

	"github.com/kvharness/kvharness/harness/fuzzing/remote"
	"github.com/kvharness/kvharness/harness/kernels"
	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/target"
	"github.com/kvharness/kvharness/plugins"
)

// checkerFD is where a fuzz worker passes the doorbell's memfd.
const checkerFD = 3

// runFuzzCheck serves one kind's out-of-process fuzz lane (package
// remote): the plugin comes from the environment, as in package fuzzing.
func runFuzzCheck(ctx context.Context, e *env, args []string) int {
	fs := flags("fuzz-check", "TARGET --spill DIR", "", e)
	spill := fs.String("spill", "", "folder for messages too long for the doorbell (the worker's)")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 || *spill == "" {
		return e.errorf("fuzz-check: want one fuzz target (%s) and --spill; go test -fuzz runs this for a kind's fuzz folder", kernels.FuzzTargets())
	}
	var k *kind.Kind
	for _, x := range kernels.All {
		if x.Fuzz.Name == fs.Arg(0) && x.Fuzz.Checker != nil {
			k = x
		}
	}
	if k == nil {
		return e.errorf("fuzz-check: no out-of-process lane for %q (targets with one: %s)", fs.Arg(0), laneTargets())
	}
	open := func(ctx context.Context) (remote.Verdicter, error) {
		v, err := k.Fuzz.Checker(ctx, plugins.Servers)
		if errors.Is(err, target.ErrUnsupported) {
			return nil, &remote.SkipError{Reason: err.Error()}
		}
		return v, err
	}
	if err := remote.Serve(ctx, checkerFD, *spill, open); err != nil {
		return e.errorf("%v", err)
	}
	return exitPass
}

// laneTargets lists the fuzz targets that have an out-of-process lane.
func laneTargets() string {
	var names []string
	for _, x := range kernels.All {
		if x.Fuzz.Checker != nil {
			names = append(names, x.Fuzz.Name)
		}
	}
	return quoteList(names)
}
