package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/target"
	"github.com/kvharness/kvharness/harness/workload"
)

// validClasses are the value classes every valid row may hold, in the
// order the header names them (validKind draws them).
var validClasses = []workload.RowKind{workload.RowZero, workload.RowNormal, workload.RowTiny, workload.RowOutlier,
	workload.RowSubnormal, workload.RowSignedZero, workload.RowMaxFinite, workload.RowBoundary}

// valueCoverage is the header's account of the values a run's rows hold:
// the classes of valid rows, where ±Inf and NaN go into valid rows (the
// layouts whose recipe says what becomes of them, by policy) and where
// not, and the classes of padded rows.
func valueCoverage(ctx context.Context, s *kind.Session, p kind.Params, cells []Cell) ([]string, error) {
	names := make([]string, len(validClasses))
	for i, k := range validClasses {
		names[i] = k.String()
	}
	policies := map[string]string{}
	var order []string
	for _, c := range cells {
		if _, ok := policies[c.Layout.Name]; ok {
			continue
		}
		dec, _, err := target.Declared(ctx, s.Plugin, Name, p.Variant, c.Layout)
		if err != nil {
			return nil, err
		}
		l, err := declaredLayout(c.Layout, dec, s.Plugin.Name)
		if err != nil {
			return nil, err
		}
		policy := string(l.NonFinite())
		if !l.Quantized() {
			policy = "copied bit for bit"
		}
		policies[c.Layout.Name], order = policy, append(order, c.Layout.Name)
	}
	var with, without []string
	for _, n := range order {
		switch pol := policies[n]; {
		case pol == string(layout.NonFiniteUndeclared):
			without = append(without, n)
		default:
			with = append(with, fmt.Sprintf("%s (%s)", n, pol))
		}
	}
	line := "values: valid rows " + strings.Join(names, ", ")
	if len(with) > 0 {
		line += "; ±Inf and NaN in valid rows of " + strings.Join(with, ", ")
	}
	line += "; padded rows garbage, non-finite, normal"
	out := []string{line}
	if len(without) > 0 {
		out = append(out, "not explored: ±Inf and NaN in valid rows of "+strings.Join(without, ", ")+
			" (the plugin declares no non-finite policy for it: recipe non_finite)")
	}
	return out, nil
}
