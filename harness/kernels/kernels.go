// Package kernels is the table of kernel kinds this kvharness checks. Each
// kind is a package below this one (store, read, transfer, load, pdasync)
// that builds on the shared kit (layout, pool, arena, target, plugin,
// oracle, property, report) and exports its kind.Kind; a new kind is a new
// package, its protocol messages, its SDK call types and one line here.
//
// The commands find every kind here: check dispatches --kernel through
// Lookup and asks the kind its default pool and whether it takes the
// flags, bench measures --kernel's kind, repro decodes a file's case with
// Decode, mutants and fuzz find a variant's kind and its fuzz target.
package kernels

import (
	"fmt"
	"strings"

	"github.com/kvharness/kvharness/harness/kernels/load"
	"github.com/kvharness/kvharness/harness/kernels/pdasync"
	"github.com/kvharness/kvharness/harness/kernels/read"
	"github.com/kvharness/kvharness/harness/kernels/sequence"
	"github.com/kvharness/kvharness/harness/kernels/store"
	"github.com/kvharness/kvharness/harness/kernels/transfer"
	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/protocol"
	"github.com/kvharness/kvharness/harness/workload"
)

// All lists the kinds, in the order a plugin's kernels are described.
var All = []*kind.Kind{&store.Kind, &read.Kind, &transfer.Kind, &load.Kind, &pdasync.Kind, &sequence.Kind}

// BenchDefault is the kind kvharness bench measures when neither --kernel
// nor the matrix names one: the first listed (store).
func BenchDefault() protocol.Kernel { return All[0].Name }

// Lookup returns the kind named k.
func Lookup(k protocol.Kernel) (*kind.Kind, error) {
	for _, x := range All {
		if x.Name == k {
			return x, nil
		}
	}
	return nil, fmt.Errorf("this kvharness cannot check %s kernels (it checks %s)", k, Names())
}

// Names lists the kinds' names.
func Names() string {
	names := make([]string, len(All))
	for i, x := range All {
		names[i] = string(x.Name)
	}
	return strings.Join(names, ", ")
}

// SlotsHelp says each kind's default pool, for --slots's help: the kinds
// that name one, then every other's (kind.DefaultSlots).
func SlotsHelp() string {
	var parts []string
	for _, x := range All {
		if x.SlotsHelp != "" {
			parts = append(parts, x.SlotsHelp)
		}
	}
	return strings.Join(append(parts, fmt.Sprintf("others %d", kind.DefaultSlots)), ", ")
}

// CheckParams refuses settings any kind refuses: what a run over several
// kinds (kvharness mutants) checks before it starts.
func CheckParams(p kind.Params) error {
	for _, x := range All {
		if err := x.CheckParams(p); err != nil {
			return err
		}
	}
	return nil
}

// FuzzTargets lists the kinds' fuzz targets.
func FuzzTargets() string { return strings.Join(FuzzTargetNames(), ", ") }

// FuzzTargetNames is the kinds' fuzz targets, in the kinds' order.
func FuzzTargetNames() []string {
	var names []string
	for _, x := range All {
		if x.Fuzz.Name != "" {
			names = append(names, x.Fuzz.Name)
		}
	}
	return names
}

// Decode reads a repro file's case of kernel k: report.CaseDecoder over
// every kind.
func Decode(k protocol.Kernel, data []byte, slots int) (workload.Case, error) {
	x, err := Lookup(k)
	if err != nil {
		return nil, fmt.Errorf("unknown kernel %q (cases this kvharness knows: %s)", k, Names())
	}
	return x.Decode(data, slots)
}
