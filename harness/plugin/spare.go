package plugin

import (
	"context"
	"slices"
)

// A spare is a process of the plugin started ahead of the next Restart
// (KeepSpare), which adopts it instead of starting one: a failure's check
// in a fresh process then waits for no process start. On the GPU that
// start is most of the check (a CUDA context is made in every new
// process); with protocol.WarmGPUEnv in Options.SpareEnv the spare makes
// its own while the run goes on. The spare is a process that has run
// nothing, so it is as fresh as one started at the Restart.
type spare struct {
	done chan struct{} // closed when p or err is set
	p    *Plugin
	err  error
}

// KeepSpare starts a spare process now, and another after every Restart
// that adopts one. Runs whose rows go one after another on a GPU keep
// one; a run of several jobs does not (each process's spare would make
// its CUDA context while the others open theirs, which slows every job
// more than the spares save). A sanitized plugin keeps none: every one of
// its processes must run under the sanitizer.
func (p *Plugin) KeepSpare(ctx context.Context) {
	p.keepSpare = true
	p.startSpare(ctx)
}

// startSpare starts a spare in the background, when KeepSpare asked for
// them and none is held.
func (p *Plugin) startSpare(ctx context.Context) {
	if !p.keepSpare || p.spare != nil || p.client == nil || p.opts.Sanitizer != nil {
		return
	}
	// The start is not cancelled: a start cut short leaves go-plugin still
	// writing the process's fields while they are closed. Dropping a spare
	// waits for its start (a fraction of a second) instead.
	ctx = context.WithoutCancel(ctx)
	s := &spare{done: make(chan struct{})}
	p.spare = s
	spec, opts := p.spec, p.opts
	opts.Env = append(slices.Clip(opts.Env), opts.SpareEnv...)
	go func() {
		defer close(s.done)
		q := &Plugin{Name: spec.Name, Path: p.Path, spec: spec, opts: opts}
		if s.err = q.launch(ctx); s.err == nil {
			s.p = q
		}
	}()
}

// takeSpare returns the spare's process, once it has started, and forgets
// it; nil when there is none or it failed to start (Restart then starts
// one as it would have).
func (p *Plugin) takeSpare() *Plugin {
	s := p.spare
	if s == nil {
		return nil
	}
	p.spare = nil
	<-s.done
	if s.p != nil && s.p.runner.exitDetail() != "" { // it died waiting
		s.p.Close()
		return nil
	}
	return s.p
}

// dropSpare stops the spare, waiting for its start to end first.
func (p *Plugin) dropSpare() {
	s := p.spare
	if s == nil {
		return
	}
	p.spare = nil
	<-s.done
	if s.p != nil {
		s.p.Close()
	}
}

// adopt makes q's process p's: p then runs as if it had just launched it.
func (p *Plugin) adopt(q *Plugin) {
	p.client, p.runner, p.conn, p.base, p.stderr, p.san, p.image, p.connected = q.client, q.runner, q.conn, q.base, q.stderr, q.san, q.image, q.connected
	p.owner, p.described = nil, nil
}

// SlowStart reports whether a process of the plugin takes long to start:
// an interpreted plugin (a Python script: the interpreter starts, then
// imports grpc, numpy and, on a GPU, torch and Triton, which compiles its
// kernels) takes a second or more even on the CPU, where a Go binary takes
// milliseconds. Runs keep a spare of such a plugin on the CPU too.
func (p *Plugin) SlowStart() bool { return p != nil && ScriptOf(p.spec.Argv) != "" }
