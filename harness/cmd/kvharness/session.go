package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/internal/textsafe"
	"github.com/kvharness/kvharness/harness/kernels"
	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/protocol"
	"github.com/kvharness/kvharness/harness/report"
	"github.com/kvharness/kvharness/harness/rundir"
)

// session is a running plugin and the private directory it lives in.
type session struct {
	dir    *rundir.Dir
	plugin *plugin.Plugin
	desc   *plugin.Description
	spec   plugin.Spec // how plugin was started, for spawn
	opts   plugin.Options
	// identity is what started the plugin, hashed (identify); nil until
	// a run that writes repro files asks.
	identity *report.PluginIdentity
}

// openDir makes the private run directory for plugins and arenas.
func openDir() (*rundir.Dir, error) { return rundir.Open() }

// trust holds the flags that decide which plugin binaries may run.
type trust struct {
	sha256 string // pinned SHA-256 of the plugin binary, hex
	noMTLS bool
}

// options turns the trust flags into plugin options.
func (t trust) options(dir *rundir.Dir, variant string, timeout time.Duration) (plugin.Options, error) {
	o := plugin.Options{Dir: dir, CallTimeout: timeout, Variant: variant, NoMTLS: t.noMTLS}
	if t.sha256 != "" {
		sum, err := hex.DecodeString(t.sha256)
		if err != nil || len(sum) != sha256.Size {
			return o, fmt.Errorf("--plugin-sha256 %q: want 64 hex digits", t.sha256)
		}
		o.SHA256 = sum
	}
	return o, nil
}

// register adds the trust flags to a command.
func (t *trust) register(fs interface {
	StringVar(*string, string, string, string)
	BoolVar(*bool, string, bool, string)
}) {
	fs.StringVar(&t.sha256, "plugin-sha256", "", "refuse to run the plugin unless its binary (a command plugin: its script) has this SHA-256 (hex)")
	fs.BoolVar(&t.noMTLS, "no-mtls", false, "no mutual TLS on the plugin channel (for plugins that cannot negotiate go-plugin's AutoMTLS)")
}

var noTrust trust

// open resolves, starts and describes a plugin.
func open(ctx context.Context, arg, variant string, headDim, pageSize int, timeout time.Duration) (*session, error) {
	return openTrusted(ctx, arg, variant, headDim, pageSize, timeout, noTrust, nil)
}

// openTrusted is open with trust flags; tune, when not nil, adjusts the
// options of every process of the plugin (onGPU).
func openTrusted(ctx context.Context, arg, variant string, headDim, pageSize int, timeout time.Duration, tr trust, tune func(*plugin.Options)) (*session, error) {
	dir, err := rundir.Open()
	if err != nil {
		return nil, err
	}
	s := &session{dir: dir}
	spec, err := resolve(arg)
	if err != nil {
		s.close()
		return nil, err
	}
	opts, err := tr.options(dir, variant, timeout)
	if err != nil {
		s.close()
		return nil, err
	}
	if tune != nil {
		tune(&opts)
	}
	s.spec, s.opts = spec, opts
	s.plugin, err = plugin.StartSpec(ctx, spec, opts)
	if err != nil {
		s.close()
		return nil, err
	}
	s.desc, err = s.plugin.Describe(ctx, plugin.Query{Variant: variant, HeadDim: headDim, PageSize: pageSize})
	if err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// resolve is plugin.ResolveSpec, with a suggestion when a plugin name
// that is no path is not found: the bundled name it is a typo of, or the
// manifest of the Python example it names.
func resolve(arg string) (plugin.Spec, error) {
	spec, err := plugin.ResolveSpec(arg)
	if err == nil || !errors.Is(err, plugin.ErrNotFound) || strings.ContainsAny(arg, "/ \t") {
		return spec, err
	}
	var names []string
	manifests := map[string]string{}
	for _, ex := range pythonExamples() {
		names = append(names, ex.name)
		manifests[ex.name] = ex.manifest
	}
	names = append(names, plugin.BundledNames()...)
	s := suggest(arg, names)
	switch {
	case s == "":
		return spec, err
	case manifests[s] != "":
		return spec, fmt.Errorf("%w; did you mean the Python example %s? Name it by its manifest: --plugin %s", err, s, shellQuote(manifests[s]))
	}
	return spec, fmt.Errorf("%w; did you mean %s?", err, s)
}

// onGPU is how the plugin's processes start for a run that wants w when it will attach its arenas on a GPU
// (cuda, or auto on a machine with a driver); nil otherwise. A spare
// process (plugin.KeepSpare, which a suite whose rows run one after
// another asks for on a GPU) is told to open the GPU as it starts
// (protocol.WarmGPUEnv), so that a failure's check in a fresh process
// finds the CUDA context made. The processes that run the rows are not:
// measured on an H100, a row's process warmed as it starts opens its row
// sooner but slows the harness's setup and the spare's context by about
// as much (the incident's report after 0.75–0.88 s, against 0.77–0.81).
func onGPU(w arena.Want) func(*plugin.Options) {
	if !w.MayUseGPU() {
		return nil
	}
	return func(o *plugin.Options) {
		o.SpareEnv = append(o.SpareEnv, protocol.WarmGPUEnv+"="+strconv.Itoa(w.Device))
	}
}

// spawn starts another process of the session's plugin, with the same
// trust and options; the caller closes it.
func (s *session) spawn(ctx context.Context) (*plugin.Plugin, error) {
	return plugin.StartSpec(ctx, s.spec, s.opts)
}

func (s *session) close() {
	if s.plugin != nil {
		s.plugin.Close()
	}
	s.dir.Close()
}

// kind is the session as a kind's check sees it; pluginArg is how the
// user named the plugin, what repro files of the run start again.
func (s *session) kind(pluginArg string) *kind.Session {
	return &kind.Session{Plugin: s.plugin, Dir: s.dir, Desc: s.desc, PluginArg: replayable(pluginArg), Spawn: s.spawn,
		Identity: s.identity}
}

// identify hashes what started the plugin named arg — its manifest, a
// command plugin's script, else its binary — for the repro files of the
// run: a replay then tells whether the plugin is still the one that
// failed. A file that cannot be read leaves the sum out.
func (s *session) identify(arg string) {
	file, of := s.spec.Argv[0], "binary"
	switch script := plugin.ScriptOf(s.spec.Argv); {
	case strings.HasSuffix(arg, ".json"):
		file, of = arg, "manifest"
	case script != "":
		file, of = script, "script"
	}
	// Escaped as the report prints them: repro files refuse what a
	// terminal would obey.
	id := &report.PluginIdentity{Name: textsafe.String(s.desc.Name), Version: textsafe.String(s.desc.Version), Of: of + " " + textsafe.String(file)}
	if abs, err := filepath.Abs(file); err == nil {
		id.Of = of + " " + textsafe.String(abs)
	}
	if sum, err := plugin.FileSHA256(file); err == nil {
		id.SHA256 = hex.EncodeToString(sum)
	}
	s.identity = id
}

// replayable is how a repro file names the plugin: a bundled name as it
// is, a path (a binary, a manifest) made absolute, so the file replays
// from any folder. A command line stays as typed.
func replayable(arg string) string {
	isPath := strings.ContainsRune(arg, '/') || strings.HasSuffix(arg, ".json") // a manifest in the working folder too
	if plugin.IsBundled(arg) || strings.IndexFunc(arg, unicode.IsSpace) >= 0 || !isPath {
		return arg
	}
	if abs, err := filepath.Abs(arg); err == nil {
		return abs
	}
	return arg
}

// layouts picks the layouts to check: a layout file, one name, or every
// built-in layout the plugin declares ("all").
func (s *session) layouts(name, file string, headDim, pageSize int) ([]*layout.Layout, error) {
	return kind.Layouts(s.desc, name, file, headDim, pageSize)
}

// kernel picks the kind to check: the one asked for, which the plugin
// must serve, or the plugin's first.
func (s *session) kernel(asked string) (*kind.Kind, error) {
	if len(s.desc.Kernels) == 0 {
		return nil, fmt.Errorf("plugin %s serves no kernel", s.desc.Name)
	}
	if asked == "" {
		return kernels.Lookup(s.desc.Kernels[0])
	}
	k, err := kernels.Lookup(protocol.Kernel(asked))
	if (err != nil && !s.desc.Serves(protocol.Kernel(asked))) || (err == nil && !k.ServedBy(s.desc.Kernels)) {
		return nil, fmt.Errorf("--kernel %s: plugin %s has no %s kernel; want one it serves: %s", asked, s.desc.Name, asked, joinKernels(s.desc.Kernels))
	}
	return k, err
}

// joinKernels lists kinds for a message: "store, read".
func joinKernels(ks []protocol.Kernel) string {
	names := make([]string, len(ks))
	for i, k := range ks {
		names[i] = string(k)
	}
	return strings.Join(names, ", ")
}
