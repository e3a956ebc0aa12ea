// Command faulty serves the fault-injection plugin; see package kernel.
package main

import "github.com/kvharness/kvharness/plugins/faulty/kernel"

func main() { kernel.Main() }
