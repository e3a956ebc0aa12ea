// Command fp8store serves the fp8store kernel as a kvharness plugin; see package
// kernel for what it does.
package main

import (
	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/plugins/fp8store/kernel"
)

func main() { sdk.Serve(kernel.Plugin) }
