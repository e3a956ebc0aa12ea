package kind

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/target"
	"github.com/kvharness/kvharness/harness/workload"
)

// Shapes is what a run draws its rows' geometry from: per layout, the
// space the plugin accepts on the axes the run draws (Setup.Draw), and
// the shapes its rows took, for the report's header.
type Shapes struct {
	axes   workload.Axes
	spaces map[string]workload.Space
	names  []string            // layouts in the order the run met them
	took   map[string][]string // layout → its rows' shapes, in order, once each
	fixed  map[string]bool     // layouts whose head dim cannot change
}

// Spaces asks the plugin which head dims and page sizes each of p's
// layouts takes (target.Accepted), on the axes p draws.
func (p Params) Spaces(ctx context.Context, s *Session, layouts []*layout.Layout) (*Shapes, error) {
	sh := &Shapes{axes: p.Draw, spaces: map[string]workload.Space{}, took: map[string][]string{}, fixed: map[string]bool{}}
	if !p.Draw.Any() {
		return sh, nil
	}
	dims, pages := p.Draw.Candidates()
	for _, l := range layouts {
		if _, ok := sh.spaces[l.Name]; ok {
			continue
		}
		sp, err := target.Accepted(ctx, s.Plugin, p.Variant, l, dims, pages, p.Draw.HeadCounts())
		if err != nil {
			return nil, err
		}
		sh.spaces[l.Name] = sp
		sh.fixed[l.Name] = l.HeadDims() != nil
	}
	return sh, nil
}

// Row is the layout the k-th row of layout l is checked at: l reshaped to
// the shape drawn for it (workload.Space.Draw, from the run's seed, l's
// name and k), or l itself when the run draws nothing. A drawn pair the
// plugin does not list together (its space was asked one axis at a time)
// keeps the head dim and l's page size, or failing that l's own shape.
func (sh *Shapes) Row(ctx context.Context, s *Session, p Params, l *layout.Layout, k int) (*layout.Layout, error) {
	out := l
	if sp, ok := sh.spaces[l.Name]; ok && !sp.Empty() {
		x := sp.Draw(workload.RowRand(p.Seed, l.Name, k), k)
		for _, try := range []workload.Shape{x, {Heads: x.Heads, HeadDim: x.HeadDim, PageSize: l.PageSize}} {
			r, err := l.ReshapedHeads(try.Heads, try.HeadDim, try.PageSize)
			if err != nil {
				continue // a pair the layout cannot take (its axes were asked one at a time)
			}
			if ok, err := listed(ctx, s, p.Variant, r); err != nil {
				return nil, err
			} else if ok {
				out = r
				break
			}
		}
	}
	sh.note(out)
	return out, nil
}

// listed reports whether the plugin's Describe at l's shape (its heads
// too) lists l.
func listed(ctx context.Context, s *Session, variant string, l *layout.Layout) (bool, error) {
	d, err := s.Plugin.Describe(ctx, target.QueryFor(variant, l))
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(d.Layouts, func(g plugin.Geometry) bool { return g.Layout == l.Name }), nil
}

func (sh *Shapes) note(l *layout.Layout) {
	x := ShapeOf(l).String()
	if !slices.Contains(sh.names, l.Name) {
		sh.names = append(sh.names, l.Name)
	}
	if !slices.Contains(sh.took[l.Name], x) {
		sh.took[l.Name] = append(sh.took[l.Name], x)
	}
}

// ShapeOf is layout l's shape: its heads (when several), head dim and
// page size.
func ShapeOf(l *layout.Layout) workload.Shape {
	x := workload.Shape{HeadDim: l.HeadDim, PageSize: l.PageSize}
	if h := l.NumHeads(); h > 1 {
		x.Heads = h
	}
	return x
}

// Drawn reports whether the run draws any axis: its table then names each
// row's shape.
func (sh *Shapes) Drawn() bool { return sh != nil && sh.axes.Any() }

// Lines are the header's account of the geometry a run covered: per
// layout, the shapes its rows took, and what the plugin did not accept of
// the candidates (so was not explored).
func (sh *Shapes) Lines() []string {
	if !sh.Drawn() {
		return nil
	}
	var parts, missing []string
	dims, pages := sh.axes.Candidates()
	for _, n := range sh.names {
		parts = append(parts, n+" "+strings.Join(sh.took[n], ", "))
		d := dims
		if sh.fixed[n] {
			d = nil // the layout fixes its head dim: nothing to explore
		}
		if u := sh.spaces[n].Unexplored(d, pages); u != "" {
			missing = append(missing, fmt.Sprintf("%s %s", n, u))
		}
	}
	if same := sh.sameShapes(); same != "" {
		parts = []string{strings.Join(sh.names, ", ") + ": " + same}
	}
	out := []string{"geometry: " + strings.Join(parts, " · ")}
	if len(missing) > 0 {
		out = append(out, "not accepted by the plugin, so not explored: "+strings.Join(missing, " · "))
	}
	return out
}

// sameShapes is the rows' shapes when every layout took the same ones, in
// the same order (a kind whose rows hold several layouts at one shape),
// else "".
func (sh *Shapes) sameShapes() string {
	if len(sh.names) < 2 {
		return ""
	}
	first := sh.took[sh.names[0]]
	for _, n := range sh.names[1:] {
		if !slices.Equal(sh.took[n], first) {
			return ""
		}
	}
	return strings.Join(first, ", ")
}

// Covered is the JSON record of the shapes the rows took, per layout.
func (sh *Shapes) Covered() map[string][]string {
	if !sh.Drawn() {
		return nil
	}
	return sh.took
}

// Joint is the shape of the k-th row of a kind whose rows hold several
// layouts at one shape (the buffers of a transfer, a layer load): drawn
// from what the plugin accepts for all of them, and listed for each at
// the drawn pair, else the layouts' own shape (ls[0]'s). Each layout's
// shape is noted for the header.
func (sh *Shapes) Joint(ctx context.Context, s *Session, p Params, ls []*layout.Layout, k int) (workload.Shape, error) {
	own := workload.Shape{HeadDim: ls[0].HeadDim, PageSize: ls[0].PageSize}
	out := own
	if sp, ok := sh.joint(ls); ok {
		x := sp.Draw(workload.RowRand(p.Seed, "joint", k), k)
		for _, try := range []workload.Shape{x, {HeadDim: x.HeadDim, PageSize: own.PageSize}} {
			ok, err := sh.allListed(ctx, s, p, ls, try)
			if err != nil {
				return own, err
			}
			if ok {
				out = try
				break
			}
		}
	}
	for _, l := range ls {
		r, err := l.Reshaped(headDimFor(l, out.HeadDim), out.PageSize)
		if err != nil {
			return own, err
		}
		sh.note(r)
	}
	return out, nil
}

// joint is the space every layout of ls accepts: each axis the values
// all of them take (a layout with a fixed head dim leaves that axis to
// the others).
func (sh *Shapes) joint(ls []*layout.Layout) (workload.Space, bool) {
	var out workload.Space
	first := true
	for _, l := range ls {
		sp, ok := sh.spaces[l.Name]
		if !ok {
			return out, false
		}
		if first {
			out, first = workload.Space{PageSizes: sp.PageSizes}, false
		} else {
			out.PageSizes = intersect(out.PageSizes, sp.PageSizes)
		}
		if sh.fixed[l.Name] {
			continue
		}
		if out.HeadDims == nil {
			out.HeadDims = sp.HeadDims
		} else {
			out.HeadDims = intersect(out.HeadDims, sp.HeadDims)
		}
	}
	if out.HeadDims == nil {
		out.HeadDims = []int{ls[0].HeadDim}
	}
	return out, !out.Empty()
}

func intersect(a, b []int) []int {
	var out []int
	for _, x := range a {
		if slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// headDimFor is the head dim layout l takes in a row of head dim d: d,
// or its own when it fixes one.
func headDimFor(l *layout.Layout, d int) int {
	if l.HeadDims() != nil {
		return l.HeadDim
	}
	return d
}

// allListed reports whether the plugin lists every layout of ls at shape x.
func (sh *Shapes) allListed(ctx context.Context, s *Session, p Params, ls []*layout.Layout, x workload.Shape) (bool, error) {
	for _, l := range ls {
		r, err := l.Reshaped(headDimFor(l, x.HeadDim), x.PageSize)
		if err != nil {
			return false, err
		}
		if ok, err := listed(ctx, s, p.Variant, r); err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

// Profiles is the shape of each profile's row, for the kinds whose rows
// are profiles over one geometry of several layouts (ls): the k-th of
// all (the kind's profiles in suite order) draws at turn k (Joint), so a
// profile's shape does not depend on which others the run checks. Nil
// when the run draws nothing.
func (sh *Shapes) Profiles(ctx context.Context, s *Session, p Params, ls []*layout.Layout, profiles, all []string) (map[string]workload.Shape, error) {
	if !sh.Drawn() {
		return nil, nil
	}
	if len(profiles) == 0 {
		profiles = all
	}
	out := map[string]workload.Shape{}
	for _, pr := range profiles {
		k := slices.Index(all, pr)
		if k < 0 {
			k = len(out)
		}
		x, err := sh.Joint(ctx, s, p, ls, k)
		if err != nil {
			return nil, err
		}
		out[pr] = x
	}
	return out, nil
}
