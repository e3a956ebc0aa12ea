// Package fuzzing drives a kernel kind's go test -fuzz target: it decodes
// each fuzz input into a valid case of the kind (every input is one; none
// is skipped), checks it against the plugin named by the environment with
// the kind's own target and oracle, and fails the input on a violation or
// a plugin fault, which go test then records as a crasher.
//
// The plugin under test comes from the environment:
//
//	KVHARNESS_PLUGIN     bundled name, binary, manifest or command line, as
//	                     check's --plugin takes it (default: the kind's)
//	KVHARNESS_VARIANT    variant (default none)
//	KVHARNESS_FUZZ_MODE  out-of-process (default) or in-process
//
// Out of process, each fuzz worker starts the real plugin (a Go binary, or
// a Python plugin by its manifest or command line) once and
// talks to it over gRPC, restarting it after a fault: exactly what a user's
// plugin sees, but the coverage guidance sees only the harness's code. In
// process (bundled Go plugins only), the kernel is linked into the test
// binary and called without gRPC: the fuzzer's coverage then includes the
// kernel's own branches, and it runs several times faster.
//
// The plugin is resolved (built, for a bundled one) and started before the
// first input: go test gives each input ten seconds, and a build on a busy
// machine can take longer.
//
// A kind's FuzzX runs in two lanes: in its own package's test binary
// (Fuzz), and in its fuzz folder, whose test binary hands each input to a
// kvharness fuzz-check process that runs an Env there (package remote,
// Lane): several times as many inputs a second, guided by the case's
// Features instead of the harness's coverage.
package fuzzing

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/harness/report"
	"github.com/kvharness/kvharness/harness/rundir"
	"github.com/kvharness/kvharness/harness/target"
	"github.com/kvharness/kvharness/harness/workload"
)

// A Checker is what a fuzz target opens: a kind's target (stores, reads)
// or its property system (the kinds that bring their own geometry),
// which checks a case itself.
type Checker[C workload.Case, R report.Result] interface {
	property.Target
	Check(ctx context.Context, c C) (R, error)
}

// Target is one kind's fuzz target.
type Target[T Checker[C, R], C workload.Case, R report.Result] struct {
	// Name is the go test target's (FuzzStore), Package the one that holds
	// it, from the source root.
	Name, Package string
	// Plugin is the plugin fuzzed when KVHARNESS_PLUGIN is unset.
	Plugin string
	// Layouts are the layouts an input's first byte picks among (the
	// next one the plugin supports when it lacks the one picked); nil for
	// a kind whose cases bring their own geometry: one target, no layout
	// byte.
	Layouts []string
	// PageSize of the fuzzed layouts.
	PageSize int
	// Open opens a target of layout l (nil without Layouts).
	Open func(ctx context.Context, p *plugin.Plugin, dir *rundir.Dir, l *layout.Layout, variant string) (T, error)
	// OpenAll, when set, opens the targets of every layout at once, nil
	// for a layout the plugin lacks: targets that share one attachment
	// cost nothing when inputs switch layouts, while targets opened one
	// by one attach again at each switch.
	OpenAll func(ctx context.Context, p *plugin.Plugin, dir *rundir.Dir, ls []*layout.Layout, variant string) ([]*T, error)
	// Decode turns input bytes (after the layout byte) into a case.
	Decode func(data []byte) C
	// Write prints a failing case for the crasher's message.
	Write func(w io.Writer, l *layout.Layout, c C, r R)
	// Features, when set, names what the decoding of a case chose (its
	// padding, how many rows, which edge a slot sits on): the signal
	// the out-of-process lane (package remote) gives go test -fuzz in
	// place of the harness's coverage, which stays in another process.
	Features func(c C) []string
}

// Env is what a fuzz worker keeps between inputs: the plugin, restarted
// after a fault, and a target per layout it supports.
type Env[T Checker[C, R], C workload.Case, R report.Result] struct {
	Plugin, Variant, Mode string

	t       *Target[T, C, R]
	spec    plugin.Spec    // how the plugin starts, out of process
	servers plugin.Servers // the bundled kernels, in process
	dir     *rundir.Dir
	p       *plugin.Plugin
	layouts []*layout.Layout
	targets []*T
	opened  bool // OpenAll has run for this plugin process
}

// NewEnv reads the plugin choice from the environment, resolves the
// plugin and starts it; servers are the bundled kernels in-process mode
// runs (plugins.Servers).
func NewEnv[T Checker[C, R], C workload.Case, R report.Result](ctx context.Context, t *Target[T, C, R], servers plugin.Servers) (*Env[T, C, R], error) {
	e := &Env[T, C, R]{t: t, servers: servers, Plugin: os.Getenv("KVHARNESS_PLUGIN"), Variant: os.Getenv("KVHARNESS_VARIANT"), Mode: os.Getenv("KVHARNESS_FUZZ_MODE")}
	if e.Plugin == "" {
		e.Plugin = t.Plugin
	}
	if e.Mode == "" {
		e.Mode = "out-of-process"
	}
	if err := e.resolve(); err != nil {
		return nil, err
	}
	for _, name := range t.Layouts {
		l, err := layout.Builtin(name, 0, t.PageSize) // the default head dim, or the layout's fixed one
		if err != nil {
			return nil, err
		}
		e.layouts = append(e.layouts, l)
	}
	dir, err := rundir.Open()
	if err != nil {
		return nil, err
	}
	e.dir = dir
	if err := e.start(ctx); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// resolve checks the mode and finds the plugin: out of process, anything
// --plugin takes (a bundled name, built if need be; a binary; a manifest;
// a command line), as check resolves it.
func (e *Env[T, C, R]) resolve() error {
	switch e.Mode {
	case "in-process":
		if _, ok := e.servers(e.Plugin); !ok {
			return fmt.Errorf("KVHARNESS_FUZZ_MODE=in-process needs a bundled Go plugin, not %q (a manifest, command or binary fuzzes out of process)", e.Plugin)
		}
		return nil
	case "out-of-process":
		spec, err := plugin.ResolveSpec(relativeTo(e.Plugin))
		if err != nil && isRelativePath(e.Plugin) {
			wd, _ := os.Getwd()
			return fmt.Errorf("KVHARNESS_PLUGIN=%s: go test runs in the package's folder (%s), and neither there nor at the module root is there such a plugin; give an absolute path, as in KVHARNESS_PLUGIN=$PWD/%s",
				e.Plugin, wd, strings.TrimPrefix(e.Plugin, "./"))
		}
		e.spec = spec
		return err
	}
	return fmt.Errorf("KVHARNESS_FUZZ_MODE=%q: want out-of-process or in-process", e.Mode)
}

// relativeTo resolves a relative plugin path the way a user who typed it
// meant it. go test runs a test in its package's folder, not where the
// user stands, and says nowhere where that was; the user who runs
// "KVHARNESS_PLUGIN=./mystore go test -fuzz ... ./harness/kernels/store"
// stands, as the README's commands do, at the module root. A path found
// from the package's folder is taken as it is.
// A command line's words are taken the same way, one by one (a line
// with quotes is left as typed).
func relativeTo(arg string) string {
	if strings.ContainsAny(arg, " \t") && !strings.ContainsAny(arg, `'"`) {
		words := strings.Fields(arg)
		for i, w := range words {
			words[i] = relativeTo(w)
		}
		return strings.Join(words, " ")
	}
	if !isRelativePath(arg) {
		return arg
	}
	if _, err := os.Stat(arg); err == nil {
		return arg
	}
	if root, ok := plugin.SourceRoot(); ok {
		if p := filepath.Join(root, arg); fileExists(p) {
			return p
		}
	}
	return arg
}

func isRelativePath(arg string) bool {
	return strings.ContainsRune(arg, '/') && !filepath.IsAbs(arg) && !strings.ContainsAny(arg, " \t")
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// start launches the plugin and opens a target: a kind without layouts
// its one, a kind with layouts the first the plugin supports (every
// layout's, with OpenAll).
func (e *Env[T, C, R]) start(ctx context.Context) error {
	if e.Mode == "in-process" {
		newServer, _ := e.servers(e.Plugin)
		e.p = plugin.InProcessOf(e.Plugin, newServer)
	} else {
		p, err := plugin.StartSpec(ctx, e.spec, plugin.Options{Dir: e.dir})
		if err != nil {
			return err
		}
		e.p = p
	}
	e.targets = make([]*T, max(len(e.layouts), 1))
	_, err := e.target(ctx, 0) // a plugin without the kind is refused now, not at every input
	return err
}

// Close stops the plugin and removes the run directory.
func (e *Env[T, C, R]) Close() {
	e.reset()
	e.dir.Close()
}

// reset drops the plugin and targets; the next input starts them again.
func (e *Env[T, C, R]) reset() {
	for _, t := range e.targets {
		if t != nil {
			(*t).Close(context.Background())
		}
	}
	if e.p != nil {
		e.p.Close()
	}
	e.p, e.targets, e.opened = nil, nil, false
}

// target returns the target of the layout pick chooses, or of the next
// layout the plugin supports.
func (e *Env[T, C, R]) target(ctx context.Context, pick byte) (*T, error) {
	if e.p == nil {
		if err := e.start(ctx); err != nil {
			return nil, err
		}
	}
	if e.t.Layouts == nil {
		if e.targets[0] == nil {
			t, err := e.t.Open(ctx, e.p, e.dir, nil, e.Variant)
			if err != nil {
				return nil, err
			}
			e.targets[0] = &t
		}
		return e.targets[0], nil
	}
	if e.t.OpenAll != nil {
		return e.pickOpened(ctx, pick)
	}
	for i := range len(e.layouts) {
		k := (int(pick) + i) % len(e.layouts)
		if e.targets[k] != nil {
			return e.targets[k], nil
		}
		t, err := e.t.Open(ctx, e.p, e.dir, e.layouts[k], e.Variant)
		if err == nil {
			e.targets[k] = &t
			return &t, nil
		}
		if !errors.Is(err, target.ErrUnsupported) {
			return nil, err
		}
	}
	return nil, fmt.Errorf("%w: plugin %s supports none of %v", target.ErrUnsupported, e.Plugin, e.t.Layouts)
}

// pickOpened is target for OpenAll: every layout's target is opened on
// the first input, and pick takes the next one the plugin supports.
func (e *Env[T, C, R]) pickOpened(ctx context.Context, pick byte) (*T, error) {
	if !e.opened {
		ts, err := e.t.OpenAll(ctx, e.p, e.dir, e.layouts, e.Variant)
		if err != nil {
			return nil, err
		}
		copy(e.targets, ts)
		e.opened = true
	}
	for i := range len(e.layouts) {
		if t := e.targets[(int(pick)+i)%len(e.layouts)]; t != nil {
			return t, nil
		}
	}
	return nil, fmt.Errorf("%w: plugin %s supports none of %v", target.ErrUnsupported, e.Plugin, e.t.Layouts)
}

// Check decodes one input and checks it. A plugin fault resets the
// environment so that the next input gets a fresh plugin.
func (e *Env[T, C, R]) Check(ctx context.Context, data []byte) (*layout.Layout, C, R, error) {
	var pick byte
	if e.t.Layouts != nil && len(data) > 0 {
		pick, data = data[0], data[1:]
	}
	var c C
	var r R
	t, err := e.target(ctx, pick)
	if err != nil {
		e.reset()
		return nil, c, r, err
	}
	var l *layout.Layout
	if e.t.Layouts != nil {
		l = e.layouts[indexOf(e.targets, t)]
	}
	c = e.t.Decode(data)
	if f, ok := any(*t).(interface{ Fit(C) C }); ok {
		// A decoder makes every value class; a target whose layout's
		// recipe says nothing of some (±Inf and NaN in valid rows) fits
		// the case to what it judges.
		c = f.Fit(c)
	}
	r, err = (*t).Check(ctx, c)
	if err != nil {
		e.reset()
	}
	return l, c, r, err
}

func indexOf[T any](ts []*T, t *T) int {
	for i, x := range ts {
		if x == t {
			return i
		}
	}
	return 0
}

// Verdict checks one input and says what go test -fuzz is to make of it:
// failure is the crasher's message (empty when the case passed), features
// the names of what the case's decoding chose, its layout first: the
// out-of-process lane's guidance.
func (e *Env[T, C, R]) Verdict(ctx context.Context, data []byte) (features []string, failure string) {
	l, c, failure := e.judge(ctx, data)
	if failure != "" {
		return nil, failure
	}
	if l != nil {
		features = append(features, "layout="+l.Name)
	}
	if e.t.Features != nil {
		features = append(features, e.t.Features(c)...)
	}
	return features, ""
}

// judge checks one input: the crasher's message, or empty when the case
// passed.
func (e *Env[T, C, R]) judge(ctx context.Context, data []byte) (*layout.Layout, C, string) {
	l, c, r, err := e.Check(ctx, data)
	if err != nil {
		return l, c, fmt.Sprintf("case %v: %v", c, err)
	}
	if !r.Failed() {
		return l, c, ""
	}
	var b bytes.Buffer
	e.t.Write(&b, l, c, r)
	who := e.Plugin // a kind that brings its own geometry has no layout to name
	if e.spec.Name != "" {
		who = e.spec.Name // the plugin's own name, not its manifest's path
	}
	if l != nil {
		who += " " + l.Name
	}
	return l, c, fmt.Sprintf("%s: property %s violated\n%s", who, r.Primary(), b.String())
}

// Fuzz is the body of a kind's FuzzX run in the test binary: a plugin
// without the kind's kernel skips the target; every input is checked,
// and a violation or a plugin fault fails it with the case printed.
func Fuzz[T Checker[C, R], C workload.Case, R report.Result](f *testing.F, t *Target[T, C, R], servers plugin.Servers) {
	env, err := NewEnv(context.Background(), t, servers)
	if errors.Is(err, target.ErrUnsupported) {
		f.Skip(err)
	}
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(env.Close)
	f.Add([]byte{})
	f.Fuzz(func(tt *testing.T, data []byte) {
		if _, _, failure := env.judge(context.Background(), data); failure != "" { // the features guide only the out-of-process lane
			tt.Fatal(failure)
		}
	})
}

// CorpusEntry is a seed as a go test fuzz corpus file holds it.
func CorpusEntry(input []byte) []byte {
	return fmt.Appendf(nil, "go test fuzz v1\n[]byte(%q)\n", input)
}

// CorpusFile is where target's seed name lives in a package's corpus.
func CorpusFile(target, name string) string { return filepath.Join("testdata", "fuzz", target, name) }

// Lane is t as a kind's table entry names it (kind.Kind.Fuzz): its name,
// its package, and the opener of the out-of-process lane's checker.
func Lane[T Checker[C, R], C workload.Case, R report.Result](t *Target[T, C, R]) kind.Fuzz {
	return kind.Fuzz{Name: t.Name, Package: t.Package, Checker: func(ctx context.Context, servers plugin.Servers) (kind.FuzzChecker, error) {
		env, err := NewEnv(ctx, t, servers)
		if err != nil {
			return nil, err // not a typed nil
		}
		return env, nil
	}}
}
