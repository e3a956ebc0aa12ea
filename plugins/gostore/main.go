// Command gostore serves the gostore kernel as a kvharness plugin; see
// package kernel for what it does.
package main

import (
	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/plugins/gostore/kernel"
)

func main() { sdk.Serve(kernel.Plugin) }
