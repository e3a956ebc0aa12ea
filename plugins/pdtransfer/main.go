// Command pdtransfer serves the pdtransfer kernel as a kvharness plugin; see
// package kernel for what it does.
package main

import (
	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/plugins/pdtransfer/kernel"
)

func main() { sdk.Serve(kernel.Plugin) }
