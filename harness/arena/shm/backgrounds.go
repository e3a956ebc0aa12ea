package shm

import (
	"sync"

	"github.com/kvharness/kvharness/harness/pool"
)

// Background copies shared by every arena of the process. A seed's
// background is the same bytes in every window it fills (counted from the
// window's start), and a check opens an arena per cell and target group,
// each filling its pools with the run's seed: a copy grown afresh per
// arena (tens of megabytes, allocated, cleared and computed each time)
// cost most of a check's time in the harness. Here it is computed once
// and handed to every arena of the seed.
//
// A copy is never written once handed out: growing one makes a longer
// copy and keeps that, and arenas holding the shorter one read on.
type backgrounds struct {
	mu     sync.Mutex
	copies map[uint64]*bgCopy
	tick   uint64
	keep   int // the most the copies hold in all (keptBackgrounds)
}

type bgCopy struct {
	b    []byte
	used uint64 // tick of the last get
}

// keptBackgrounds is the most the shared copies hold in all: a few seeds'
// copies of a far pool's reach (copyBytes). A copy larger alone is handed
// to its arena and not kept.
const keptBackgrounds = 4 * copyBytes

var shared = backgrounds{copies: map[uint64]*bgCopy{}, keep: keptBackgrounds}

// get returns seed's background, at least n bytes long. A copy that must
// grow doubles, up to reach (the arena's size), and is growBytes at least:
// a lazily filled window's copy grows as its cases reach further in, in a
// few steps, not a page at a time.
func (c *backgrounds) get(seed uint64, n, reach int) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tick++
	e := c.copies[seed]
	if e == nil {
		e = &bgCopy{}
	}
	e.used = c.tick
	if len(e.b) >= n {
		return e.b
	}
	grown := make([]byte, max(n, min(2*len(e.b), reach), growBytes))
	copy(grown, e.b)
	pool.FillBackground(grown[len(e.b):], seed, len(e.b))
	if len(grown) > c.keep {
		return grown
	}
	e.b = grown
	c.copies[seed] = e
	c.evict(seed)
	return grown
}

// evict drops the least recently used copies other than seed keep's
// until the copies fit c.keep.
func (c *backgrounds) evict(keep uint64) {
	for {
		total, oldest, found := 0, uint64(0), false
		for seed, e := range c.copies {
			total += len(e.b)
			if seed != keep && (!found || e.used < c.copies[oldest].used) {
				oldest, found = seed, true
			}
		}
		if total <= c.keep || !found {
			return
		}
		delete(c.copies, oldest)
	}
}
