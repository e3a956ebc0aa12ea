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
	ctx, stop := interruptible(os.Stderr, os.Exit)
	code := run(ctx, os.Stdout, os.Stderr, os.Args[1:])
	stop()
	os.Exit(code)
}
