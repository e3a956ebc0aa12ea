package plugin_test

import (
	"context"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvharness/kvharness/harness/internal/plugintest"
	"github.com/kvharness/kvharness/harness/plugin"
)

// A command-line plugin: here `env` runs the fusedstore binary, standing in
// for an interpreter running a script.
func TestCommandPlugin(t *testing.T) {
	bin := plugintest.Resolve(t, "fusedstore")
	spec, err := plugin.ResolveSpec("env KVHARNESS_EXAMPLE='a b' " + bin)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"KVHARNESS_EXAMPLE=a b", bin}; !cmp.Equal(spec.Argv[1:], want) {
		t.Errorf("argv %q, want env %q", spec.Argv, want)
	}
	dir := plugintest.Dir(t)
	p, err := plugin.StartSpec(context.Background(), spec, plugin.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	d, err := p.Describe(context.Background(), plugin.Query{HeadDim: 128, PageSize: 64})
	if err != nil || d.Name != "fusedstore" {
		t.Fatalf("describe through a command: %v %v", d, err)
	}
}

// Pinning a command covers its script, and a changed script is refused.
func TestPinCoversScript(t *testing.T) {
	bin := plugintest.Resolve(t, "fusedstore")
	script := filepath.Join(t.TempDir(), "plugin")
	data, _ := os.ReadFile(bin)
	os.WriteFile(script, data, 0o755)
	sum, _ := plugin.FileSHA256(script)
	spec, err := plugin.ResolveSpec("env " + script)
	if err != nil {
		t.Fatal(err)
	}
	dir := plugintest.Dir(t)
	p, err := plugin.StartSpec(context.Background(), spec, plugin.Options{Dir: dir, SHA256: sum})
	if err != nil {
		t.Fatalf("pinned script refused: %v", err)
	}
	p.Close()
	os.WriteFile(script, append(data, 0), 0o755)
	_, err = plugin.StartSpec(context.Background(), spec, plugin.Options{Dir: dir, SHA256: sum})
	if !errors.Is(err, plugin.ErrChecksum) || !strings.Contains(err.Error(), script) {
		t.Errorf("changed script: err = %v, want ErrChecksum naming %s", err, script)
	}
}

func TestManifest(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "plugin.py"), []byte("print()\n"), 0o644)
	sum, _ := plugin.FileSHA256(filepath.Join(dir, "plugin.py"))
	manifest := `{"name": "torchscatter", "command": ["sh", "plugin.py"], "mtls": false,
		"sha256": {"plugin.py": "` + hexOf(sum) + `"}}`
	path := filepath.Join(dir, "kvharness-plugin.json")
	os.WriteFile(path, []byte(manifest), 0o644)
	spec, err := plugin.ResolveSpec(path)
	if err != nil {
		t.Fatal(err)
	}
	if spec.Name != "torchscatter" || !spec.NoMTLS || spec.Argv[1] != filepath.Join(dir, "plugin.py") || len(spec.Pins) != 1 {
		t.Errorf("spec %+v", spec)
	}
	os.WriteFile(path, []byte(`{"name": "x", "comand": ["sh"]}`), 0o644)
	if _, err := plugin.ResolveSpec(path); err == nil {
		t.Error("a manifest with an unknown key was accepted")
	}
}

func TestSplitQuotesAndErrors(t *testing.T) {
	if _, err := plugin.ResolveSpec("sh 'unterminated"); err == nil {
		t.Error("unterminated quote accepted")
	}
	if _, err := plugin.ResolveSpec("no-such-interpreter-xyz script.py"); !errors.Is(err, plugin.ErrNotFound) {
		t.Errorf("missing interpreter: %v", err)
	}
}

func hexOf(b []byte) string { return hex.EncodeToString(b) }

// A pinned binary under a sanitizer runs from a copy of the image its pin
// was checked against (the sealed image cannot be handed on by
// descriptor), and the sanitizer runs around it.
func TestPinnedUnderSanitizer(t *testing.T) {
	bin := plugintest.Resolve(t, "fusedstore")
	sum, _ := plugin.FileSHA256(bin)
	dir := plugintest.Dir(t)
	p, err := plugin.Start(context.Background(), "fusedstore", bin, plugin.Options{Dir: dir, SHA256: sum})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	san := plugintest.FakeSanitizer(t)
	if err := p.Sanitize(context.Background(), san); err != nil {
		t.Fatalf("pinned plugin under a sanitizer: %v", err)
	}
	if d, err := p.Describe(context.Background(), plugin.Query{HeadDim: 128, PageSize: 64}); err != nil || d.Name != "fusedstore" {
		t.Fatalf("describe under the sanitizer: %v %v", d, err)
	}
	copies, _ := filepath.Glob(filepath.Join(dir.Path, "plugin-image-*"))
	logs, _ := filepath.Glob(filepath.Join(san.Logs, "*.log"))
	if len(copies) != 1 || len(logs) != 1 {
		t.Errorf("image copies %q, sanitizer logs %q: want one of each", copies, logs)
	}
	if c, _ := plugin.FileSHA256(copies[0]); hexOf(c) != hexOf(sum) {
		t.Errorf("the copy's SHA-256 %s is not the pin's", hexOf(c))
	}
}
