package benchrun

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kvharness/kvharness/harness/results"
	"github.com/kvharness/kvharness/harness/shard"
)

// A part is one shard's output folder.
type part struct {
	dir   string
	man   Manifest
	spec  shard.Spec
	cells []results.Cell
}

// Merge joins the output folders of the shards of one night into its
// cells, in the order one unsharded run lists them, and the night's
// manifest. It refuses parts of different plans, commits or devices, a
// part given twice or missing (gaps and overlaps), and a part that lacks
// cells of its units (it did not finish) or holds cells of another's.
func Merge(dirs []string) ([]results.Cell, Manifest, error) {
	parts, err := readParts(dirs)
	if err != nil {
		return nil, Manifest{}, err
	}
	if err := checkParts(parts); err != nil {
		return nil, Manifest{}, err
	}
	owner := map[results.Key]string{}
	var cells []results.Cell
	for _, p := range parts {
		if err := checkCells(p, owner); err != nil {
			return nil, Manifest{}, err
		}
		cells = append(cells, p.cells...)
	}
	man := mergedManifest(parts)
	sortCells(cells, man.AllUnits)
	for _, c := range cells {
		man.Cells = append(man.Cells, c.Key())
	}
	return cells, man, nil
}

func readParts(dirs []string) ([]*part, error) {
	if len(dirs) == 0 {
		return nil, fmt.Errorf("no shard folders to merge")
	}
	var parts []*part
	for _, d := range dirs {
		man, err := ReadManifest(filepath.Join(d, ManifestFile))
		if err != nil {
			return nil, err
		}
		spec, err := shard.Parse(man.Shard)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", d, err)
		}
		log, err := results.ReadLogFile(filepath.Join(d, LogFile))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", d, err)
		}
		parts = append(parts, &part{d, man, spec, log.Cells})
	}
	slices.SortStableFunc(parts, func(a, b *part) int { return cmp.Compare(a.spec.Index, b.spec.Index) })
	return parts, nil
}

// checkParts refuses parts that are not the n shards of one plan, once
// each.
func checkParts(parts []*part) error {
	first := parts[0]
	n := first.spec.Count
	for _, p := range parts {
		switch {
		case p.man.PlanDigest != first.man.PlanDigest || p.spec.Count != n:
			return fmt.Errorf("%s (shard %s of plan %s) and %s (shard %s of plan %s) are parts of different nights: merge shards of one matrix, plugins and count",
				first.dir, first.man.Shard, first.man.PlanDigest, p.dir, p.man.Shard, p.man.PlanDigest)
		case p.man.Commit != first.man.Commit || p.man.Device != first.man.Device:
			return fmt.Errorf("%s ran commit %s on %s, %s commit %s on %s: a night's shards must run one build on one kind of device",
				first.dir, first.man.Commit, first.man.Device, p.dir, p.man.Commit, p.man.Device)
		}
	}
	seen := map[int]string{}
	for _, p := range parts {
		if d, ok := seen[p.spec.Index]; ok {
			return fmt.Errorf("overlap: shard %s is both %s and %s; merge each shard once", p.man.Shard, d, p.dir)
		}
		seen[p.spec.Index] = p.dir
	}
	var missing []string
	for i := 1; i <= n; i++ {
		if _, ok := seen[i]; !ok {
			missing = append(missing, fmt.Sprintf("%d/%d", i, n))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("gap: shard %s missing (merge needs all %d parts; run kvharness bench --shard %s)", strings.Join(missing, ", "), n, missing[0])
	}
	return checkUnits(parts)
}

// checkUnits refuses a unit owned twice, and units that do not add up to
// the plan's.
func checkUnits(parts []*part) error {
	owner := map[string]string{}
	for _, p := range parts {
		for _, u := range p.man.Units {
			if d, ok := owner[u]; ok {
				return fmt.Errorf("overlap: unit %s is in %s and %s", u, d, p.dir)
			}
			owner[u] = p.dir
		}
	}
	if len(owner) != parts[0].man.PlanUnits {
		return fmt.Errorf("gap: the shards own %d of the plan's %d units", len(owner), parts[0].man.PlanUnits)
	}
	return nil
}

// checkCells refuses a part whose cells are not those its manifest
// plans, and a cell another part holds.
func checkCells(p *part, owner map[results.Key]string) error {
	have := map[results.Key]bool{}
	for _, c := range p.cells {
		if d, ok := owner[c.Key()]; ok {
			return fmt.Errorf("overlap: cell %s is in %s and %s", c.Key(), d, p.dir)
		}
		owner[c.Key()] = p.dir
		have[c.Key()] = true
	}
	planned := map[results.Key]bool{}
	var lost []results.Key
	for _, k := range p.man.Cells {
		planned[k] = true
		if !have[k] {
			lost = append(lost, k)
		}
	}
	if len(lost) > 0 {
		return fmt.Errorf("gap: shard %s (%s) lacks %d of its %d cells, such as %s: it did not finish; rerun it there with --resume",
			p.man.Shard, p.dir, len(lost), len(p.man.Cells), lost[0])
	}
	for _, c := range p.cells {
		if !planned[c.Key()] {
			return fmt.Errorf("shard %s (%s) holds cell %s, which its plan does not make: was its folder reused for another matrix?", p.man.Shard, p.dir, c.Key())
		}
	}
	return nil
}

func mergedManifest(parts []*part) Manifest {
	man := parts[0].man
	man.Shard, man.Units, man.Cells, man.Merged = shard.Whole.String(), man.AllUnits, nil, nil
	for _, p := range parts {
		man.Merged = append(man.Merged, p.man.Shard)
		if p.man.Started.Before(man.Started) {
			man.Started = p.man.Started
		}
	}
	return man
}

// sortCells puts cells in the order of an unsharded run: by unit in the
// matrix's order (a layout's empty launches with its first unit), stably.
func sortCells(cells []results.Cell, units []string) {
	pos := map[string]int{}
	first := map[string]int{}
	for i, u := range units {
		pos[u] = i
		group := u[:strings.LastIndex(u, "/")]
		if _, ok := first[group]; !ok {
			first[group] = i
		}
	}
	at := func(c results.Cell) int {
		if c.Kernel == results.KernelEmpty {
			return first[c.Plugin+"/"+c.Layout]
		}
		return pos[Unit{c.Plugin, c.Layout, c.Tokens}.Key()]
	}
	slices.SortStableFunc(cells, func(a, b results.Cell) int { return cmp.Compare(at(a), at(b)) })
}
