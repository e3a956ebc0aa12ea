// Command pdasync serves the pdasync kernel as a kvharness plugin; see
// package kernel for what it does.
package main

import (
	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/plugins/pdasync/kernel"
)

func main() { sdk.Serve(kernel.Plugin) }
