package store

import (
	"runtime"
	"sort"
	"sync"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/workload"
)

// Oracle is everything the oracle knows about one store case on one
// pool. Build it once per case; Check it after every run of that case.
type Oracle struct {
	Layout   *layout.Layout
	Region   pool.Region
	Seed     uint64
	Case     *Case
	Declared oracle.Declared
	// Mode is how valid rows' values are judged: by the layout's recipes
	// (the zero value) or bit-exact.
	Mode layout.Mode
	// Inputs are the static scales the kernel was given with the rows.
	Inputs layout.Inputs

	rows      [][]uint16      // input data, per row
	records   [][][]byte      // reference encoding, per row (padded rows lazily)
	validSlot map[int64]int   // slot → valid row
	padTarget map[int64][]int // slot → padded rows pointing at it
	cache     *rowCache       // the target's rows of small seeds, or nil
}

// NewOracle encodes the case's rows with the reference encoder.
func NewOracle(l *layout.Layout, r pool.Region, seed uint64, c *Case, d oracle.Declared) *Oracle {
	return buildOracle(l, r, seed, c, d, layout.Inputs{}, nil)
}

// NewOracleWith is NewOracle for a kernel given static scales besides
// its rows.
func NewOracleWith(l *layout.Layout, r pool.Region, seed uint64, c *Case, d oracle.Declared, in layout.Inputs) *Oracle {
	return buildOracle(l, r, seed, c, d, in, nil)
}

// buildOracle is NewOracle taking the rows of small seeds from cache, and
// adding them there, when cache is set.
func buildOracle(l *layout.Layout, r pool.Region, seed uint64, c *Case, d oracle.Declared, in layout.Inputs, cache *rowCache) *Oracle {
	sc := &Oracle{Layout: l, Region: r, Seed: seed, Case: c, Declared: d, Inputs: in,
		rows: make([][]uint16, c.Capacity()), records: make([][][]byte, c.Capacity()),
		validSlot: make(map[int64]int, c.Valid), padTarget: map[int64][]int{}, cache: cache}
	sc.prepare()
	for i := range c.Capacity() {
		if i < c.Valid {
			sc.validSlot[c.Loc[i]] = i
		} else {
			sc.padTarget[c.Loc[i]] = append(sc.padTarget[c.Loc[i]], i)
		}
	}
	return sc
}

// prepareChunk rows are drawn and encoded per goroutine: a large batch's
// rows are the harness's largest cost per case, and independent.
const prepareChunk = 32

// prepare draws every row and encodes the valid ones, spread over the CPUs.
func (sc *Oracle) prepare() {
	c, l := sc.Case, sc.Layout
	do := func(lo, hi int) {
		for i := lo; i < hi; i++ {
			if e := sc.cache.get(c.Rows[i], l, sc.Inputs, i < c.Valid); e != nil {
				sc.rows[i] = e.data
				if i < c.Valid {
					sc.records[i] = e.record
				}
				continue
			}
			sc.rows[i] = c.Rows[i].Data(l.RowElems())
			if i < c.Valid {
				sc.records[i] = l.EncodeWith(sc.rows[i], sc.Inputs)
			}
		}
	}
	n := c.Capacity()
	if n <= prepareChunk || runtime.GOMAXPROCS(0) == 1 || sc.cache.holds(c.Rows[:n]) {
		do(0, n)
		return
	}
	var wg sync.WaitGroup
	for lo := 0; lo < n; lo += prepareChunk {
		wg.Go(func() { do(lo, min(lo+prepareChunk, n)) })
	}
	wg.Wait()
}

// Rows returns the input rows as bf16 bit patterns, row-major, for staging.
func (sc *Oracle) Rows() [][]uint16 { return sc.rows }

func (sc *Oracle) record(i int) [][]byte {
	if sc.records[i] == nil {
		if e := sc.cache.get(sc.Case.Rows[i], sc.Layout, sc.Inputs, true); e != nil {
			sc.records[i] = e.record
		} else {
			sc.records[i] = sc.Layout.EncodeWith(sc.rows[i], sc.Inputs)
		}
	}
	return sc.records[i]
}

// rowCache keeps the data and reference encoding of the rows whose seeds
// are below cachedSeeds, for one target (one layout). A decoded fuzz
// input draws its rows' seeds from one byte (Decode) and a shrink
// simplifies rows to small seeds, so out of process the same few
// thousand rows come back case after case, and drawing and encoding them
// was a fifth of a FuzzStore exec; drawn cases' seeds are any uint64 and
// are computed each time. What it hands out is shared: never written.
type rowCache struct {
	mu   sync.Mutex // prepare's goroutines share it
	rows map[workload.Row]*cachedRow
}

// cachedSeeds bounds the cache: six kinds of 256 seeds.
const cachedSeeds = 256

type cachedRow struct {
	data   []uint16
	record [][]byte // nil until a valid row or a classification needs it
}

// get is row's entry, with its record when encode is set, or nil when
// the row is not cached (no cache, or a large seed).
func (rc *rowCache) get(row workload.Row, l *layout.Layout, in layout.Inputs, encode bool) *cachedRow {
	if rc == nil || row.Seed >= cachedSeeds {
		return nil
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.rows == nil {
		rc.rows = map[workload.Row]*cachedRow{}
	}
	e := rc.rows[row]
	if e == nil {
		e = &cachedRow{data: row.Data(l.RowElems())}
		rc.rows[row] = e
	}
	if encode && e.record == nil {
		e.record = l.EncodeWith(e.data, in)
	}
	return e
}

// holds reports whether every row is one the cache keeps: preparing them
// is not worth goroutines.
func (rc *rowCache) holds(rows []workload.Row) bool {
	if rc == nil {
		return false
	}
	for _, r := range rows {
		if r.Seed >= cachedSeeds {
			return false
		}
	}
	return true
}

// Check classifies every wrong byte a run left, given its delta.
func (sc *Oracle) Check(d oracle.Delta) []oracle.Violation {
	v := &classifier{sc: sc, delta: d, untouched: map[int]bool{}}
	covered := v.collectValid()
	v.collectRest(covered)
	if len(v.wrong) == 0 {
		return nil
	}
	sort.SliceStable(v.wrong, func(i, j int) bool { return v.wrong[i].off < v.wrong[j].off })
	v.explain()
	v.classify()
	if t := sc.Case.Table; t != nil {
		for k := range v.out {
			placeInTable(&v.out[k], t) // pagetable.go
		}
	}
	return v.out
}
