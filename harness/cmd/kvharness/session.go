package main

import (
	"context"
	"fmt"
	"time"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// session is a running plugin and the private directory it lives in.
type session struct {
	dir    *pool.Dir
	plugin *plugin.Plugin
	desc   *kvpb.DescribeResponse
}

// openDir makes the private run directory for plugins and arenas.
func openDir() (*pool.Dir, error) { return pool.OpenDir() }

// open resolves, starts and describes a plugin.
func open(ctx context.Context, arg, variant string, headDim, pageSize int, timeout time.Duration) (*session, error) {
	dir, err := pool.OpenDir()
	if err != nil {
		return nil, err
	}
	s := &session{dir: dir}
	path, err := plugin.Resolve(arg)
	if err != nil {
		s.close()
		return nil, err
	}
	s.plugin, err = plugin.Start(ctx, arg, path, plugin.Options{Dir: dir, CallTimeout: timeout})
	if err != nil {
		s.close()
		return nil, err
	}
	s.desc, err = s.plugin.Describe(ctx, &kvpb.DescribeRequest{Variant: variant, HeadDim: uint32(headDim), PageSize: uint32(pageSize)})
	if err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

func (s *session) close() {
	if s.plugin != nil {
		s.plugin.Close()
	}
	s.dir.Close()
}

// layouts picks the layouts to check: a layout file, one name, or every
// built-in layout the plugin declares ("all").
func (s *session) layouts(name, file string, headDim, pageSize int) ([]*layout.Layout, error) {
	if file != "" {
		l, err := layout.Load(file, pageSize)
		if err != nil {
			return nil, err
		}
		return []*layout.Layout{l}, nil
	}
	var names []string
	if name == "all" {
		for _, g := range s.desc.Layouts {
			if layout.Describe(g.Layout) != "" {
				names = append(names, g.Layout)
			}
		}
		if len(names) == 0 {
			return nil, fmt.Errorf("plugin %s declares no built-in layout; give --layout-file", s.desc.Name)
		}
	} else {
		names = []string{name}
	}
	var out []*layout.Layout
	for _, n := range names {
		d := headDim
		if fixed := layout.FixedHeadDim(n); fixed != 0 && d == layout.DefaultHeadDim {
			d = fixed
		}
		l, err := layout.Builtin(n, d, pageSize)
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, nil
}
