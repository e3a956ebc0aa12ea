package main

import (
	"context"

	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/sdk"
	bf16scatter "github.com/kvharness/kvharness/plugins/bf16scatter/kernel"
	faulty "github.com/kvharness/kvharness/plugins/faulty/kernel"
	fp8store "github.com/kvharness/kvharness/plugins/fp8store/kernel"
	fusedstore "github.com/kvharness/kvharness/plugins/fusedstore/kernel"
	pdtransfer "github.com/kvharness/kvharness/plugins/pdtransfer/kernel"
)

func init() {
	register(plugin.ServeCommand, "serve a bundled plugin from this binary (the harness runs it; so can a wrapper script)", runServe)
}

// bundledMains serve the bundled plugins from the kvharness binary itself,
// so one file is all a machine without Go needs.
var bundledMains = map[string]func(){
	"fusedstore":  func() { sdk.Serve(fusedstore.Plugin) },
	"pdtransfer":  func() { sdk.Serve(pdtransfer.Plugin) },
	"fp8store":    func() { sdk.Serve(fp8store.Plugin) },
	"bf16scatter": func() { sdk.Serve(bf16scatter.Plugin) },
	"faulty":      faulty.Main,
}

func runServe(_ context.Context, e *env, args []string) int {
	if len(args) != 1 {
		return e.errorf("%s takes one bundled plugin name", plugin.ServeCommand)
	}
	serve, ok := bundledMains[args[0]]
	if !ok {
		return e.errorf("no bundled plugin %q", args[0])
	}
	serve() // returns when the harness is done with the plugin
	return exitPass
}
