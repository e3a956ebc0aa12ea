package main

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// complete runs the bash completion script for a command line whose last
// word is being typed, as bash's programmable completion calls it, and
// returns the candidates.
func complete(t *testing.T, script string, words ...string) []string {
	t.Helper()
	var quoted []string
	for _, w := range words {
		quoted = append(quoted, "'"+w+"'")
	}
	prog := script + "\nCOMP_WORDS=(" + strings.Join(quoted, " ") + ")\nCOMP_CWORD=" + itoa(len(words)-1) +
		"\n_kvharness\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n"
	out, err := exec.Command("bash", "-c", prog).CombinedOutput()
	if err != nil {
		t.Fatalf("bash: %v\n%s", err, out)
	}
	return strings.Fields(string(out))
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestCompletion: kvharness completion bash completes commands, each
// command's own flags, and the values of flags that take a fixed set;
// zsh gets the same through bashcompinit; another shell is refused.
func TestCompletion(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	code, script, errOut := runCLI(t, "completion", "bash")
	if code != exitPass || errOut != "" {
		t.Fatalf("completion bash: exit %d: %s", code, errOut)
	}
	for _, tc := range []struct {
		words []string
		want  string
		not   string
	}{
		{[]string{"kvharness", "ch"}, "check", "bench"},
		{[]string{"kvharness", "check", "--pa"}, "--padding --page-size", "--lane"},
		{[]string{"kvharness", "fuzz", "--la"}, "--lane", "--layout"},
		{[]string{"kvharness", "check", "--padding", ""}, "none count sink minus1 all", ""},
		{[]string{"kvharness", "check", "--plugin", "fused"}, "fusedstore", "fp8store"},
		{[]string{"kvharness", "bench", "--max-"}, "--max-noise --max-time", ""},
		{[]string{"kvharness", "help", "mu"}, "mutants", ""},
	} {
		got := strings.Join(complete(t, script, tc.words...), " ")
		if !strings.Contains(got, tc.want) || tc.not != "" && strings.Contains(got, tc.not) {
			t.Errorf("%q: completed %q; want %q (and not %q)", tc.words, got, tc.want, tc.not)
		}
	}
	code, zsh, _ := runCLI(t, "completion", "zsh")
	if code != exitPass || !strings.HasPrefix(zsh, "#compdef kvharness\n") || !strings.Contains(zsh, "bashcompinit") || !strings.Contains(zsh, "complete -o filenames -F _kvharness kvharness") {
		t.Errorf("completion zsh: exit %d:\n%.300s", code, zsh)
	}
	if code, _, errOut := runCLI(t, "completion", "fish"); code != exitError || !strings.Contains(errOut, "bash or zsh") {
		t.Errorf("completion fish: exit %d, %q", code, errOut)
	}
}
