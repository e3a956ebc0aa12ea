package read

import (
	"fmt"
	"io"
	"strings"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/plugin"
)

// A read kernel declares what it does with ±Inf and NaN in queries and
// keys (Describe's read_non_finite: the Go SDK's Plugin.ReadNonFinite, the
// Python SDK's Kernel.read_non_finite). A read knows one policy,
// layout.Contained, undefined but contained: a request whose query, or a
// key its list names, holds ±Inf or NaN as the pool stores it (a tainted
// request) may answer any ranking of its own list. Its out window is
// judged for form alone (each result a slot of its own list, none twice,
// or slot -1; any scores), because no order of NaN scores is more right
// than another. Every other request of the call is judged in full, the
// pool and the inputs must stay untouched, and the two runs must agree on
// every request judged. A kernel that declares nothing is given finite
// queries and keys only.
//
// Propagate, a store's policy, has no precise meaning for a read: whether
// an infinite element makes a score ±Inf or NaN depends on the kernel's
// arithmetic, not on the data. A quantized key's scale factored out of
// the sum, (Σ q·c)·s, and applied per element, Σ q·(c·s), differ as soon
// as s is infinite and a code is 0 (0·∞), and a float32 sum's order
// decides whether ∞ − ∞ occurs before or after a partial sum overflows.
// No one reference ranks such a request, so none is judged.

// Policy is the read policy a plugin's description declares: contained
// or none. Any other is an error naming the plugin and the fix.
func Policy(name string, d *plugin.Description) (layout.NonFinite, error) {
	switch {
	case d.ReadNonFiniteErr != nil:
		return "", fmt.Errorf("plugin %s: read_%w; update kvharness, or declare contained or nothing", name, d.ReadNonFiniteErr)
	case d.ReadNonFinite == layout.NonFiniteUndeclared || d.ReadNonFinite == layout.Contained:
		return d.ReadNonFinite, nil
	}
	return "", fmt.Errorf("plugin %s declares read_non_finite %s: a read kernel declares contained or nothing (%s is a store's recipe policy)",
		name, d.ReadNonFinite, d.ReadNonFinite)
}

// nonFiniteBF16 reports whether a bf16 element is ±Inf or NaN.
func nonFiniteBF16(e uint16) bool { return e&0x7f80 == 0x7f80 }

// firstNonFinite names the first query or key of the case drawn with ±Inf
// or NaN, "" when none is.
func (r *Case) firstNonFinite() string {
	for i, q := range r.Requests {
		if q.Query.Kind == VecNonFinite {
			return fmt.Sprintf("request %d's query", i)
		}
	}
	for _, k := range r.Keys {
		if k.Kind == VecNonFinite {
			return fmt.Sprintf("the key of slot %d", k.Slot)
		}
	}
	return ""
}

// Admits returns an error when the case holds ±Inf or NaN and the plugin
// declares no policy for them (p is ""): its answer to them would be
// judged by a rule it never agreed to.
func (r *Case) Admits(p layout.NonFinite) error {
	if what := r.firstNonFinite(); what != "" && p == layout.NonFiniteUndeclared {
		return fmt.Errorf("%s holds ±Inf or NaN, but the plugin declares no read non-finite policy: "+
			"declare read_non_finite contained, or give the vector another kind", what)
	}
	return nil
}

// Fit is c as the target judges it: where the plugin declares no
// non-finite policy, a non-finite query or key becomes a normal one of
// the same seed (a fuzz input decodes every class).
func (t *Target) Fit(c *Case) *Case {
	if t.NonFinite != layout.NonFiniteUndeclared || c.firstNonFinite() == "" {
		return c
	}
	out := c.Clone()
	for i, q := range out.Requests {
		if q.Query.Kind == VecNonFinite {
			out.Requests[i].Query.Kind = VecNormal
		}
	}
	for i, k := range out.Keys {
		if k.Kind == VecNonFinite {
			out.Keys[i].Kind = VecNormal
		}
	}
	return out
}

// specials names a vector's ±Inf and NaN elements by index, e.g.
// "d3 +Inf, d17 NaN, d20 -NaN(0xffc1)": a NaN's bits are shown where they
// are not the quiet 0x7fc0 or 0xffc0.
func specials(data []uint16) string {
	var parts []string
	for d, e := range data {
		if !nonFiniteBF16(e) {
			continue
		}
		sign := "+"
		if e&0x8000 != 0 {
			sign = "-"
		}
		name := sign + "Inf"
		if e&0x7f != 0 {
			name = strings.TrimPrefix(sign, "+") + "NaN"
			if e&0x7fff != 0x7fc0 {
				name += fmt.Sprintf("(%#04x)", e)
			}
		}
		parts = append(parts, fmt.Sprintf("d%d %s", d, name))
	}
	return strings.Join(parts, ", ")
}

// writeSpecials prints where the case's non-finite queries and keys hold
// ±Inf and NaN, at most 8 of each, as drawn for a head dim of d.
func writeSpecials(w io.Writer, indent string, c *Case, d int) {
	const most = 8
	n := 0
	for i, q := range c.Requests {
		if q.Query.Kind == VecNonFinite && n < most {
			fmt.Fprintf(w, "%s  request %d query: %s\n", indent, i, specials(q.Query.Data(d)))
			n++
		}
	}
	n = 0
	for _, k := range c.Keys {
		if k.Kind == VecNonFinite && n < most {
			fmt.Fprintf(w, "%s  key slot %d: %s\n", indent, k.Slot, specials(k.Data(d)))
			n++
		}
	}
}
