// Command bf16scatter serves the bf16scatter kernel as a kvharness plugin; see package
// kernel for what it does.
package main

import (
	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/plugins/bf16scatter/kernel"
)

func main() { sdk.Serve(kernel.Plugin) }
