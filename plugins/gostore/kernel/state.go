package kernel

import (
	"sync"
	"time"
)

// poolSlot names a slot of one pool.
type poolSlot struct {
	pool string
	slot int64
}

// scaleCache is the stale-scale-cache variant's bug: a slot's first scale,
// kept for the life of the process and never invalidated when another
// row is stored there. A fresh process stores every case correctly: the
// failure needs the process's history.
type scaleCache struct {
	mu sync.Mutex
	m  map[poolSlot]float32
}

func (c *scaleCache) get(k poolSlot, compute func() float32) float32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.m[k]; ok {
		return s
	}
	if c.m == nil {
		c.m = map[poolSlot]float32{}
	}
	s := compute()
	c.m[k] = s
	return s
}

// race's kernel time: the call holds its core this long, for the base
// and per row, ample for its writers on an idle machine.
const (
	raceBase   = 300 * time.Microsecond
	racePerRow = 2 * time.Microsecond
)

// race stores rows 0..n-1, each from a goroutine of its own, and returns
// as a kernel that skips its final synchronisation does: when its own
// work is done (it spins for a fixed time, holding its core), whether or
// not every writer ran. On an idle machine they all have; when other
// processes hold the cores, a writer that has not been scheduled by then
// is dropped. A lock keeps late writers out once the call has returned,
// so the bug is a dropped row and never a write after the harness looked.
func race(n int, put func(i int)) {
	var (
		mu     sync.Mutex
		closed bool
	)
	for i := range n {
		go func() {
			mu.Lock()
			defer mu.Unlock()
			if !closed {
				put(i)
			}
		}()
	}
	for deadline := time.Now().Add(raceBase + time.Duration(n)*racePerRow); time.Now().Before(deadline); {
	}
	mu.Lock()
	closed = true
	mu.Unlock()
}
