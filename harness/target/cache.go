package target

import (
	"context"
	"slices"
)

// Cache keeps the last few targets opened, by key (a geometry's): a
// shrinking run checks cases over smaller and smaller arenas and comes
// back to earlier ones, and opening an arena costs a plugin call.
type Cache[T interface{ Close(context.Context) }] struct {
	Max     int // targets kept open; the least recently used beyond it is closed
	targets map[string]T
	recent  []string // keys, least recently used first
}

// Get returns the target of key, opening it with open when the cache does
// not hold it (and closing the least recently used one beyond Max).
func (c *Cache[T]) Get(ctx context.Context, key string, open func() (T, error)) (T, error) {
	if t, ok := c.targets[key]; ok {
		c.touch(key)
		return t, nil
	}
	t, err := open()
	if err != nil {
		return t, err
	}
	if c.targets == nil {
		c.targets = map[string]T{}
	}
	c.targets[key] = t
	c.touch(key)
	if len(c.recent) > c.Max {
		old := c.recent[0]
		c.targets[old].Close(ctx)
		delete(c.targets, old)
		c.recent = c.recent[1:]
	}
	return t, nil
}

func (c *Cache[T]) touch(key string) {
	c.recent = append(slices.DeleteFunc(c.recent, func(k string) bool { return k == key }), key)
}

// Each calls f on every open target.
func (c *Cache[T]) Each(f func(T)) {
	for _, key := range c.recent {
		f(c.targets[key])
	}
}

// Close closes every target, least recently used first.
func (c *Cache[T]) Close(ctx context.Context) {
	c.Each(func(t T) { t.Close(ctx) })
	clear(c.targets)
	c.recent = nil
}
