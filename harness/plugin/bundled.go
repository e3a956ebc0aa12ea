package plugin

import "slices"

// Role is what a bundled plugin is for.
type Role int

const (
	// UnderTest plugins are what kvharness checks, benchmarks and mutates
	// by default: correct kernels, each with named mutants.
	UnderTest Role = iota
	// Reference plugins are whole plugins kept broken on purpose: run
	// without a variant they are mutants, not controls.
	Reference
	// FaultInjection plugins misbehave as processes (panic, hang, exit,
	// garbage) to test the harness's fault handling; they are never
	// checked by default.
	FaultInjection
)

// Bundled is a plugin that ships in plugins/NAME: built on demand from
// the source tree, or served by the kvharness binary itself.
type Bundled struct {
	Name string
	Role Role
	Bug  string // for a Reference plugin: the bug it reproduces
}

// BundledPlugins is the table of bundled plugins, in the order commands
// list them. What kinds each serves is its code's to say (package
// plugins: Serving), as any plugin's Describe says it.
var BundledPlugins = []Bundled{
	{Name: "fusedstore", Role: UnderTest},
	{Name: "fp8store", Role: UnderTest},
	{Name: "recipestore", Role: UnderTest},
	{Name: "bf16scatter", Role: Reference, Bug: "the incident's pad-unaware scatter"},
	{Name: "gostore", Role: UnderTest},
	{Name: "pdtransfer", Role: UnderTest},
	{Name: "layerload", Role: UnderTest},
	{Name: "pdasync", Role: UnderTest},
	{Name: "faulty", Role: FaultInjection},
}

// BundledNames lists every bundled plugin.
func BundledNames() []string { return bundledWhere(func(Bundled) bool { return true }) }

// UnderTestNames lists the bundled plugins checked by default: every one
// but the fault injectors.
func UnderTestNames() []string {
	return bundledWhere(func(b Bundled) bool { return b.Role != FaultInjection })
}

// IsBundled reports whether name is a bundled plugin.
func IsBundled(name string) bool { return slices.Contains(BundledNames(), name) }

// BundledByName returns the bundled plugin called name.
func BundledByName(name string) (Bundled, bool) {
	for _, b := range BundledPlugins {
		if b.Name == name {
			return b, true
		}
	}
	return Bundled{}, false
}

func bundledWhere(keep func(Bundled) bool) []string {
	var out []string
	for _, b := range BundledPlugins {
		if keep(b) {
			out = append(out, b.Name)
		}
	}
	return out
}
