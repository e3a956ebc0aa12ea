// Package fncache keeps the bundled plugins' compiled CUDA functions for
// the life of the process: an attach compiles (or loads from the cubin
// cache) once, every call after it only looks the function up.
package fncache

import (
	"strings"
	"sync"

	"github.com/kvharness/kvharness/harness/cuda"
)

// Cache maps a device and a build (name, entry point and options) to its
// compiled function. The zero value is ready to use.
type Cache struct {
	mu sync.Mutex
	fn map[key]*cuda.Function
}

type key struct {
	dev   *cuda.Device
	build string // name, entry and options: all that makes a cubin differ
}

// Function returns entry of program compiled as name with opts on dev,
// compiling it on first use.
//
// It compiles without the lock, so that kernels compile concurrently (a
// plugin's PrepareDevice may compile an attach's pools at once); two
// compiles of one build both succeed and the first to finish is kept.
func (c *Cache) Function(dev *cuda.Device, name, program, entry string, opts []string) (*cuda.Function, error) {
	k := key{dev, name + "\x00" + entry + "\x00" + strings.Join(opts, "\x00")}
	c.mu.Lock()
	f := c.fn[k]
	c.mu.Unlock()
	if f != nil {
		return f, nil
	}
	m, err := dev.Compile(name, program, opts...)
	if err != nil {
		return nil, err
	}
	if f, err = m.Function(entry); err != nil {
		m.Unload()
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if kept := c.fn[k]; kept != nil {
		m.Unload()
		return kept, nil
	}
	if c.fn == nil {
		c.fn = make(map[key]*cuda.Function)
	}
	c.fn[k] = f
	return f, nil
}
