// Command kvharness checks and benchmarks KV-cache kernel plugins.
//
// Run `kvharness help` for the commands and `kvharness CMD --help` for
// their flags and examples.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/kvharness/kvharness/harness/plugin"
)

func main() {
	plugin.SelfServes = true
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Stdout, os.Stderr, os.Args[1:])
	stop()
	os.Exit(code)
}
