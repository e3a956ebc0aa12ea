package main

import (
	"context"

	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/plugins"
)

const serveExamples = `  kvharness serve-plugin fusedstore     # what the harness runs when no plugin binary is built
  printf '#!/bin/sh\nexec kvharness serve-plugin fusedstore\n' > wrapper.sh
`

func runServe(_ context.Context, e *env, args []string) int {
	fs := flags(plugin.ServeCommand, "NAME", serveExamples, e)
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return e.errorf("%s: want one bundled plugin name (%s), got %d arguments", plugin.ServeCommand, quoteList(plugin.BundledNames()), fs.NArg())
	}
	code, ok := plugins.Lookup(fs.Arg(0))
	if !ok {
		return e.errorf("%s: no bundled plugin %q; want one of %s", plugin.ServeCommand, fs.Arg(0), quoteList(plugin.BundledNames()))
	}
	code.Main() // returns when the harness is done with the plugin
	return exitPass
}
