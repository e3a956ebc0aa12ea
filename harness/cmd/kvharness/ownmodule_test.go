package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/internal/testtier"
)

// TestGoPluginInOwnModule builds the README's Go plugin the way a kernel
// author does first: in a module of their own, outside this tree, with
// kvharness required through a replace directive (and, the other way the
// README gives, a go.work file), then checks it. The plugin's code is the
// README's own, so the documentation cannot drift from what builds.
func TestGoPluginInOwnModule(t *testing.T) {
	testtier.FullOnly(t, "builds a plugin module of its own with go build")
	root, ok := plugin.SourceRoot()
	if !ok {
		t.Fatal("no source root")
	}
	code := readmeGoPlugin(t, filepath.Join(root, "docs", "go-plugins.md"))
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for _, how := range []string{"replace", "go.work"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			mod := "module example.com/mystore\n\ngo 1.26.0\n"
			if how == "replace" {
				mod += "\nrequire " + plugin.Module + " v0.0.0\n\nreplace " + plugin.Module + " => " + root + "\n"
			} else { // the workspace provides kvharness: the module requires nothing of it
				write(t, filepath.Join(dir, "go.work"), "go 1.26.0\n\nuse (\n\t.\n\t"+root+"\n)\n")
			}
			write(t, filepath.Join(dir, "go.mod"), mod)
			write(t, filepath.Join(dir, "go.sum"), string(sum)) // the module cache has every dependency already
			write(t, filepath.Join(dir, "main.go"), code)
			bin := filepath.Join(dir, "mystore")
			build := exec.Command("go", "build", "-o", bin, ".")
			build.Dir = dir
			build.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
			if how == "go.work" {
				build.Env = append(os.Environ(), "GOFLAGS=") // workspaces read go.mod as it is
			}
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("go build in its own module (%s): %v\n%s", how, err, out)
			}
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), &stdout, &stderr, []string{"check", "--plugin", bin, "--cases", "30",
				"--backend", "cpu", "--results", filepath.Join(dir, "results")})
			if code != exitPass || !strings.Contains(stdout.String(), "mystore") {
				t.Errorf("check of the module's plugin: exit %d\n%s%s", code, stdout.String(), stderr.String())
			}
		})
	}
}

// readmeGoPlugin is the first Go code block of the Go plugin walk-through
// (docs/go-plugins.md, which the README links).
func readmeGoPlugin(t *testing.T, path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "# Writing a plugin in Go")
	if !ok {
		t.Fatalf("%s has no Writing a plugin in Go section", path)
	}
	_, block, ok := strings.Cut(section, "```go\n")
	code, _, ok2 := strings.Cut(block, "```")
	if !ok || !ok2 {
		t.Fatal("the section has no go code block")
	}
	return code
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
