// Command kvharness checks and benchmarks KV-cache kernel plugins.
//
// Run `kvharness help` for the commands and `kvharness help CMD` for
// their flags and examples.
package main

import (
	"os"

	"github.com/kvharness/kvharness/harness/plugin"
)

func main() {
	plugin.SelfServes = true
	plugin.Guard()
	ctx, stop := interruptible(os.Stderr, os.Exit)
	code := run(ctx, os.Stdout, os.Stderr, os.Args[1:])
	stop()
	plugin.KillChildren() // nothing the run or its plugins started outlives it (the harness is their subreaper)
	os.Exit(code)
}
