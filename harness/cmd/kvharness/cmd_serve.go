package main

import (
	"context"

	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/plugins"
)

func init() {
	register(plugin.ServeCommand, "serve a bundled plugin from this binary (the harness runs it; so can a wrapper script)", runServe)
}

func runServe(_ context.Context, e *env, args []string) int {
	if len(args) != 1 {
		return e.errorf("%s takes one bundled plugin name", plugin.ServeCommand)
	}
	code, ok := plugins.Lookup(args[0])
	if !ok {
		return e.errorf("no bundled plugin %q", args[0])
	}
	code.Main() // returns when the harness is done with the plugin
	return exitPass
}
