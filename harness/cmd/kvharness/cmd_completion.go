package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"

	"github.com/kvharness/kvharness/harness/kernels"
	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/plugin"
)

const completionExamples = `  source <(kvharness completion bash)                      # this shell
  kvharness completion bash > ~/.local/share/bash-completion/completions/kvharness
  kvharness completion zsh > "${fpath[1]}/_kvharness"    # then restart zsh
`

// runCompletion prints a shell completion script: commands, each
// command's flags, and the values of the flags that take a fixed set
// (bundled plugins, layouts, paddings, backends, kernels); files
// elsewhere.
func runCompletion(ctx context.Context, e *env, args []string) int {
	fs := flags("completion", "bash|zsh", completionExamples, e)
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 || !oneOf(fs.Arg(0), "bash", "zsh") {
		return e.errorf("completion: want the shell, bash or zsh, as in kvharness completion bash")
	}
	script := bashCompletion(ctx, e.commands)
	if fs.Arg(0) == "zsh" {
		script = "#compdef kvharness\n# kvharness completion for zsh: the bash completion through zsh's bashcompinit.\nautoload -U +X bashcompinit && bashcompinit\n" + script
	}
	io.WriteString(e.stdout, script)
	return exitPass
}

// flagNameLine is one flag in a command's help: its name.
var flagNameLine = regexp.MustCompile(`^\s+(?:-\w, )?--([\w-]+)`)

// commandFlags lists a command's flags, as its help prints them.
func commandFlags(ctx context.Context, c command) []string {
	var out bytes.Buffer
	c.run(ctx, &env{stdout: &out, stderr: io.Discard}, []string{"--help"})
	var flags []string
	for _, line := range strings.Split(out.String(), "\n") {
		if m := flagNameLine.FindStringSubmatch(line); m != nil && !slices.Contains(flags, "--"+m[1]) {
			flags = append(flags, "--"+m[1])
		}
	}
	return append(flags, "--help")
}

// flagValues are the values completed after a flag, where they are a
// fixed set.
func flagValues() map[string][]string {
	var kinds []string
	for _, k := range kernels.All {
		kinds = append(kinds, string(k.Name))
	}
	return map[string][]string{
		"--plugin":  plugin.BundledNames(),
		"--layout":  append(append(layout.Names(), layout.ModelNames()...), kind.Groups...),
		"--padding": {"none", "count", "sink", "minus1", "all"},
		"--backend": {"auto", "cpu", "cuda"},
		"--kernel":  kinds,
		"--value":   {"recipe", "exact"},
		"--lane":    {"out-of-process", "in-process"},
		"--format":  {"text", "md", "csv", "json"},
		"--mode":    {"eager", "graph"},
		"--cache":   {"hot", "cold"},
		"--timing":  {"per-launch", "batched"},
		"--target":  append(kernels.FuzzTargetNames(), "all"),
	}
}

// bashCompletion is the bash script for the commands of table.
func bashCompletion(ctx context.Context, table map[string]command) string {
	var b strings.Builder
	var names []string
	for n, c := range table {
		if !c.hidden {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	fmt.Fprintf(&b, "# kvharness completion for bash: source <(kvharness completion bash)\n_kvharness() {\n")
	fmt.Fprintf(&b, "\tlocal cur=\"${COMP_WORDS[COMP_CWORD]}\" prev=\"${COMP_WORDS[COMP_CWORD-1]}\" cmd=\"${COMP_WORDS[1]}\"\n\tCOMPREPLY=()\n")
	fmt.Fprintf(&b, "\tif [ \"$COMP_CWORD\" -eq 1 ]; then\n\t\tCOMPREPLY=($(compgen -W %q -- \"$cur\"))\n\t\treturn\n\tfi\n",
		strings.Join(append(names, "help", "version"), " "))
	fmt.Fprintf(&b, "\tif [ \"$cmd\" = help ] && [ \"$COMP_CWORD\" -eq 2 ]; then\n\t\tCOMPREPLY=($(compgen -W %q -- \"$cur\"))\n\t\treturn\n\tfi\n",
		strings.Join(names, " "))
	fmt.Fprintf(&b, "\tcase \"$prev\" in\n")
	values := flagValues()
	for _, f := range slices.Sorted(mapKeys(values)) {
		extra := ""
		if f == "--plugin" {
			extra = " $(compgen -f -- \"$cur\")" // a path, a manifest
		}
		fmt.Fprintf(&b, "\t%s)\n\t\tCOMPREPLY=($(compgen -W %q -- \"$cur\")%s)\n\t\treturn\n\t\t;;\n", f, strings.Join(values[f], " "), extra)
	}
	fmt.Fprintf(&b, "\tesac\n\tif [[ \"$cur\" == -* ]]; then\n\t\tcase \"$cmd\" in\n")
	for _, n := range names {
		fmt.Fprintf(&b, "\t\t%s)\n\t\t\tCOMPREPLY=($(compgen -W %q -- \"$cur\"))\n\t\t\t;;\n", n, strings.Join(commandFlags(ctx, table[n]), " "))
	}
	fmt.Fprintf(&b, "\t\tesac\n\t\treturn\n\tfi\n\tCOMPREPLY=($(compgen -f -- \"$cur\"))\n}\ncomplete -o filenames -F _kvharness kvharness\n")
	return b.String()
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
