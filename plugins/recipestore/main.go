// Command recipestore serves the recipestore kernel as a kvharness plugin;
// see package kernel for what it does.
package main

import (
	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/plugins/recipestore/kernel"
)

func main() { sdk.Serve(kernel.Plugin) }
