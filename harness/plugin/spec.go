package plugin

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/kvharness/kvharness/harness/internal/inputfile"
	"github.com/kvharness/kvharness/harness/internal/textsafe"
)

// Spec says how to start a plugin: a binary, or a command line that runs
// an interpreter on a script (a Python plugin), usually named by a
// manifest file. Go plugins need only Argv.
type Spec struct {
	Name string
	Argv []string // Argv[0] is the executable
	Dir  string   // working directory; "" keeps the harness's
	// Pins maps files to the SHA-256 they must have before every start:
	// for an interpreted plugin the script, not only the interpreter.
	Pins map[string][]byte
	// NoMTLS is for plugins that cannot negotiate go-plugin's AutoMTLS.
	NoMTLS bool
}

// Manifest is a plugin manifest file (JSON): what to run and how to trust it.
//
//	{"name": "torchscatter", "command": ["python3", "plugin.py"],
//	 "mtls": false, "sha256": {"plugin.py": "9f86d0…"}}
//
// Relative paths in command, dir and sha256 are relative to the manifest.
type Manifest struct {
	Name    string            `json:"name"`
	Command []string          `json:"command"`
	Dir     string            `json:"dir,omitempty"`
	MTLS    *bool             `json:"mtls,omitempty"` // default true
	SHA256  map[string]string `json:"sha256,omitempty"`
}

// ResolveSpec turns a --plugin argument into a Spec: a manifest (a .json
// file), a command line (an argument with spaces, such as
// 'python3 plugins/python/torchscatter/plugin.py'), or a bundled name or
// binary path (see Resolve).
func ResolveSpec(arg string) (Spec, error) {
	switch {
	case strings.HasSuffix(arg, ".json"):
		return loadManifest(arg)
	case strings.IndexFunc(arg, unicode.IsSpace) >= 0:
		return commandSpec(arg)
	}
	path, err := Resolve(arg)
	if errors.Is(err, ErrNotFound) && SelfServes && IsBundled(arg) {
		if exe, xerr := os.Executable(); xerr == nil {
			return Spec{Name: arg, Argv: []string{exe, ServeCommand, arg}}, nil
		}
	}
	if err != nil {
		return Spec{}, err
	}
	return Spec{Name: arg, Argv: []string{path}}, nil
}

// ServeCommand is the kvharness subcommand that serves a bundled plugin
// from the kvharness binary itself.
const ServeCommand = "serve-plugin"

// SelfServes is set by the kvharness command: its binary holds the bundled
// plugins, so when no plugin binary and no Go toolchain are at hand (a GPU
// machine, say) a bundled name runs `kvharness serve-plugin NAME`.
var SelfServes bool

func commandSpec(line string) (Spec, error) {
	argv, err := splitCommand(line)
	if err != nil {
		return Spec{}, err
	}
	exe, err := lookCommand(argv[0])
	if err != nil {
		return Spec{}, fmt.Errorf("%w: %s: %v; install it or give its full path", ErrNotFound, argv[0], err)
	}
	argv[0] = exe
	name := filepath.Base(exe)
	if script := ScriptOf(argv); script != "" {
		name = strings.TrimSuffix(filepath.Base(script), filepath.Ext(script))
		if name == "plugin" || name == "main" {
			name = filepath.Base(filepath.Dir(script))
		}
	}
	return Spec{Name: name, Argv: argv}, nil
}

// ScriptOf is the last argument that names an existing file: what a
// checksum pin of a command plugin covers ("" for a plain binary).
func ScriptOf(argv []string) string {
	for i := len(argv) - 1; i > 0; i-- {
		if st, err := os.Stat(argv[i]); err == nil && st.Mode().IsRegular() {
			return argv[i]
		}
	}
	return ""
}

// splitCommand splits a command line on white space, honouring single and
// double quotes. It runs nothing through a shell.
func splitCommand(line string) ([]string, error) {
	var out []string
	var cur strings.Builder
	quote, inWord := rune(0), false
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case unicode.IsSpace(r):
			if inWord {
				out, inWord = append(out, cur.String()), false
				cur.Reset()
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("plugin command %q: unterminated %c quote; close the quote (run nothing through a shell: kvharness splits the command itself)", line, quote)
	}
	if inWord {
		out = append(out, cur.String())
	}
	if len(out) == 0 {
		return nil, errors.New("empty plugin command")
	}
	return out, nil
}

// MaxManifestBytes bounds a manifest file.
const MaxManifestBytes = 1 << 20

func loadManifest(path string) (Spec, error) {
	data, err := inputfile.Read(path, "plugin manifest", MaxManifestBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return Spec{}, fmt.Errorf("%w: manifest %s does not exist; give the path of a plugin manifest (a .json file naming the plugin's command)", ErrNotFound, path)
	}
	if err != nil {
		return Spec{}, err
	}
	var m Manifest
	if err := inputfile.DecodeJSON(data, &m); err != nil {
		return Spec{}, fmt.Errorf("manifest %s: %w; correct the manifest (the README's Plugins section shows one)", path, err)
	}
	if len(m.Command) == 0 {
		return Spec{}, fmt.Errorf(`manifest %s: no command; give one, as in "command": ["python3", "plugin.py"]`, path)
	}
	if err := m.check(); err != nil {
		return Spec{}, fmt.Errorf("manifest %s: %w; correct the manifest", path, err)
	}
	base, err := filepath.Abs(filepath.Dir(path)) // the plugin runs in base: relative paths would double
	if err != nil {
		return Spec{}, fmt.Errorf("manifest %s: %w", path, err)
	}
	return m.spec(base)
}

// check refuses what no manifest means: a name or command word that is
// empty or holds control characters (printed in every report).
func (m Manifest) check() error {
	if textsafe.String(m.Name) != m.Name {
		return fmt.Errorf("name %q: want printable characters", textsafe.String(m.Name))
	}
	for i, w := range m.Command {
		if w == "" || textsafe.String(w) != w {
			return fmt.Errorf("command[%d] %q: want a non-empty word of printable characters", i, textsafe.String(w))
		}
	}
	for file := range m.SHA256 {
		if file == "" {
			return fmt.Errorf(`sha256: a file named "": want the path of the file pinned`)
		}
	}
	return nil
}

func (m Manifest) spec(base string) (Spec, error) {
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(base, p)
	}
	s := Spec{Name: m.Name, Dir: abs(m.Dir), NoMTLS: m.MTLS != nil && !*m.MTLS, Pins: map[string][]byte{}}
	exe := m.Command[0]
	if strings.ContainsRune(exe, '/') {
		exe = abs(exe)
	} else if p, err := lookCommand(exe); err == nil {
		exe = p
	} else {
		return Spec{}, fmt.Errorf("%w: manifest command %s: %v; install it or give its full path", ErrNotFound, exe, err)
	}
	s.Argv = []string{exe}
	for _, a := range m.Command[1:] {
		if st, err := os.Stat(abs(a)); err == nil && st.Mode().IsRegular() {
			a = abs(a)
		}
		s.Argv = append(s.Argv, a)
	}
	for file, sum := range m.SHA256 {
		b, err := hex.DecodeString(sum)
		if err != nil || len(b) != 32 {
			return Spec{}, fmt.Errorf("manifest sha256 of %s: want 64 hex digits", file)
		}
		s.Pins[abs(file)] = b
	}
	if s.Name == "" {
		s.Name = filepath.Base(base)
	}
	return s, nil
}

// StartSpec launches a plugin from a Spec.
func StartSpec(ctx context.Context, s Spec, opts Options) (*Plugin, error) {
	opts.NoMTLS = opts.NoMTLS || s.NoMTLS
	if len(opts.SHA256) > 0 { // --plugin-sha256 pins the script of a command, else the binary
		target := s.Argv[0]
		if script := ScriptOf(s.Argv); script != "" {
			target = script
		}
		if s.Pins == nil {
			s.Pins = map[string][]byte{}
		}
		s.Pins[target] = opts.SHA256
		opts.SHA256 = nil
	}
	return start(ctx, s, opts) // every pin is checked as the process starts
}
