package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/kvharness/kvharness/harness/internal/gobuild"
)

// sourceFlag is the flag that names another kvharness source tree to
// build bundled plugins from. Without it they come from the tree
// kvharness was built from, or from the binary itself: never from the
// working directory, which may be anyone's.
const sourceFlag = "plugin-source"

// sourceCommands are the commands that start bundled plugins, and so take
// --plugin-source.
var sourceCommands = map[string]bool{"check": true, "bench": true, "mutants": true, "plugins": true, "repro": true, "fuzz": true}

// addSourceFlag adds --plugin-source to a command that starts plugins.
func addSourceFlag(fs *pflag.FlagSet) {
	if sourceCommands[fs.Name()] {
		fs.String(sourceFlag, "", "build bundled plugins from this kvharness source tree (default: the tree kvharness was built from, else the plugins built into kvharness; never the working directory)")
	}
}

// applySource makes --plugin-source, when given, the tree this command
// builds bundled plugins from (gobuild.SourceEnv, which the go test of
// kvharness fuzz inherits too). run restores the variable after the
// command.
func applySource(fs *pflag.FlagSet) error {
	f := fs.Lookup(sourceFlag)
	if f == nil || !f.Changed {
		return nil
	}
	dir, err := filepath.Abs(f.Value.String())
	if err == nil {
		err = gobuild.CheckRoot(dir)
	}
	if err != nil {
		return &valueError{f, fmt.Sprintf("%v; want the folder of a kvharness checkout (its go.mod names %s)", err, gobuild.Module)}
	}
	return os.Setenv(gobuild.SourceEnv, dir)
}

// keepSourceEnv returns a function that puts gobuild.SourceEnv back as it
// is now: --plugin-source holds for one command, also when commands run in
// one process (tests).
func keepSourceEnv() func() {
	was, set := os.LookupEnv(gobuild.SourceEnv)
	return func() {
		if set {
			os.Setenv(gobuild.SourceEnv, was)
		} else {
			os.Unsetenv(gobuild.SourceEnv)
		}
	}
}
