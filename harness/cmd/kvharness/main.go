// Command kvharness checks and benchmarks KV-cache kernel plugins.
//
// Run `kvharness help` for the commands and `kvharness help CMD` for
// their flags and examples.
package main

import (
	"fmt"
	"os"
	"time"

	"github.com/kvharness/kvharness/harness/internal/gobuild"
	"github.com/kvharness/kvharness/harness/internal/textsafe"
	"github.com/kvharness/kvharness/harness/plugin"
)

func main() {
	plugin.SelfServes = true
	plugin.Guard()
	gobuild.Building = building
	plugin.PythonChosen = func(name, path, why string) {
		fmt.Fprintf(os.Stderr, "kvharness: python plugins' %s is %s: %s (set %s to choose another)\n", textsafe.String(name), textsafe.String(path), textsafe.String(why), plugin.PythonEnv)
	}
	ctx, stop := interruptible(os.Stderr, os.Exit)
	code := run(ctx, os.Stdout, os.Stderr, os.Args[1:])
	stop()
	plugin.KillChildren() // nothing the run or its plugins started outlives it (the harness is their subreaper)
	os.Exit(code)
}

// building says on stderr what is being built from source and, once it
// is, how long it took: a checkout's first build of a plugin takes
// minutes (go build compiles its dependencies), later ones are cached.
func building(name string) func(error) {
	start, what := time.Now(), "plugin "+name
	if name == "kvharness" {
		what = name // the fuzz lane's checker
	}
	fmt.Fprintf(os.Stderr, "kvharness: building %s from source (go build; a few minutes the first time, cached after)…\n", textsafe.String(what))
	return func(err error) {
		if err == nil {
			fmt.Fprintf(os.Stderr, "kvharness: built %s in %v\n", textsafe.String(name), time.Since(start).Round(100*time.Millisecond))
		}
	}
}
