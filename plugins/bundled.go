// Package plugins is the code of the bundled plugins, by name: what the
// kvharness binary serves itself (kvharness serve-plugin NAME) and what
// fuzz targets link in to fuzz a kernel in process. The names and roles
// are harness/plugin's table (plugin.BundledPlugins); each plugin's own
// command is plugins/NAME.
package plugins

import (
	"slices"

	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/protocol"
	"github.com/kvharness/kvharness/harness/sdk"
	bf16scatter "github.com/kvharness/kvharness/plugins/bf16scatter/kernel"
	faulty "github.com/kvharness/kvharness/plugins/faulty/kernel"
	fp8store "github.com/kvharness/kvharness/plugins/fp8store/kernel"
	fusedstore "github.com/kvharness/kvharness/plugins/fusedstore/kernel"
	gostore "github.com/kvharness/kvharness/plugins/gostore/kernel"
	layerload "github.com/kvharness/kvharness/plugins/layerload/kernel"
	pdasync "github.com/kvharness/kvharness/plugins/pdasync/kernel"
	pdtransfer "github.com/kvharness/kvharness/plugins/pdtransfer/kernel"
	recipestore "github.com/kvharness/kvharness/plugins/recipestore/kernel"
)

// Code is a bundled plugin's code: its Go kernel, when it is one the SDK
// serves as is, and how to serve it as a process.
type Code struct {
	Name   string
	Kernel *sdk.Plugin // nil for a plugin that serves itself (faulty)
	Main   func()
}

// Bundled is every bundled plugin's code, in plugin.BundledPlugins order.
var Bundled = []Code{
	served("fusedstore", &fusedstore.Plugin),
	served("fp8store", &fp8store.Plugin),
	served("recipestore", &recipestore.Plugin),
	served("bf16scatter", &bf16scatter.Plugin),
	served("gostore", &gostore.Plugin),
	served("pdtransfer", &pdtransfer.Plugin),
	served("layerload", &layerload.Plugin),
	served("pdasync", &pdasync.Plugin),
	{Name: "faulty", Main: faulty.Main},
}

func served(name string, p *sdk.Plugin) Code {
	return Code{Name: name, Kernel: p, Main: func() { sdk.Serve(*p) }}
}

// Lookup returns the code of the bundled plugin called name.
func Lookup(name string) (Code, bool) {
	for _, c := range Bundled {
		if c.Name == name {
			return c, true
		}
	}
	return Code{}, false
}

// Serving lists the bundled plugins that serve kind k, checked by
// default (fault injectors left out), in plugin.BundledPlugins order:
// what each plugin's kinds register, as its Describe would list them.
func Serving(k protocol.Kernel) []string {
	var out []string
	for _, b := range plugin.BundledPlugins {
		code, ok := Lookup(b.Name)
		if ok && code.Kernel != nil && b.Role != plugin.FaultInjection && slices.Contains(code.Kernel.Kernels(), string(k)) {
			out = append(out, b.Name)
		}
	}
	return out
}

// Servers is plugin.Servers over the bundled Go plugins: what runs a
// bundled kernel in process (fuzzing's in-process mode).
func Servers(name string) (protocol.Services, bool) {
	code, ok := Lookup(name)
	if !ok || code.Kernel == nil {
		return nil, false
	}
	return sdk.Services(*code.Kernel), true
}
