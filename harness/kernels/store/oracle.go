package store

import (
	"runtime"
	"sort"
	"sync"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/pool"
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

	rows      [][]uint16      // input data, per row
	records   [][][]byte      // reference encoding, per row (padded rows lazily)
	validSlot map[int64]int   // slot → valid row
	padTarget map[int64][]int // slot → padded rows pointing at it
}

// NewOracle encodes the case's rows with the reference encoder.
func NewOracle(l *layout.Layout, r pool.Region, seed uint64, c *Case, d oracle.Declared) *Oracle {
	sc := &Oracle{Layout: l, Region: r, Seed: seed, Case: c, Declared: d,
		rows: make([][]uint16, c.Capacity()), records: make([][][]byte, c.Capacity()),
		validSlot: make(map[int64]int, c.Valid), padTarget: map[int64][]int{}}
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
			sc.rows[i] = c.Rows[i].Data(l.HeadDim)
			if i < c.Valid {
				sc.records[i] = l.Encode(sc.rows[i])
			}
		}
	}
	n := c.Capacity()
	if n <= prepareChunk || runtime.GOMAXPROCS(0) == 1 {
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
		sc.records[i] = sc.Layout.Encode(sc.rows[i])
	}
	return sc.records[i]
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
	return v.out
}
