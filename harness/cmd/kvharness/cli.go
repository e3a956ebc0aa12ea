package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kvharness/kvharness/harness/plugin"
)

// Exit codes: the contract CI and nightly jobs script against.
const (
	exitPass        = 0   // every property held
	exitViolation   = 1   // an invariant was violated (or a mutant survived)
	exitError       = 2   // bad usage, bad input, or a plugin fault
	exitInterrupted = 130 // stopped by a signal (128 + SIGINT, as shells report it)
)

// command is one subcommand. A command builds its flag set when it runs
// (flags, then parse): commands stay one function each, and the table
// below is all a new one adds to.
type command struct {
	summary string
	run     func(ctx context.Context, env *env, args []string) int
	hidden  bool // left out of the command list (serve-plugin: the harness runs it)
}

// env is what every command writes to, and the command table (for the
// commands that list the others: completion).
type env struct {
	stdout, stderr io.Writer
	commands       map[string]command
}

// errorf prints one line on stderr and returns the usage-or-input exit
// code. Messages name the input and, where it is known, the fix.
//
// One exception: a plugin that failed with last words (a Python
// traceback, a Go panic, its stderr's last lines) has them printed whole
// under that line, as it wrote them: an import error folded onto one line
// is hard to read.
func (e *env) errorf(format string, args ...any) int {
	msg := fmt.Sprintf(format, args...)
	if head, words, ok := strings.Cut(msg, "\n"); ok && hasLastWords(args) {
		fmt.Fprintf(e.stderr, "kvharness: %s\n%s\n", oneLine(head), strings.TrimRight(words, "\n"))
		return exitError
	}
	fmt.Fprintf(e.stderr, "kvharness: %s\n", oneLine(msg))
	return exitError
}

// hasLastWords reports whether an argument is a plugin fault carrying the
// plugin's own last words.
func hasLastWords(args []any) bool {
	for _, a := range args {
		var f *plugin.Fault
		if err, ok := a.(error); ok && errors.As(err, &f) && (f.Panic != nil || strings.TrimSpace(f.Stderr) != "") {
			return true
		}
	}
	return false
}

// oneLine folds a message onto one line: errors wrapped from elsewhere
// (a compiler's output, a plugin's stderr) may hold newlines, and the
// contract is one line per error.
func oneLine(s string) string {
	s = strings.TrimRight(s, "\n")
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " · ")), " ")
}

// commands are kvharness's subcommands, by name.
var commands = map[string]command{
	"bench":             {summary: "measure throughput and tail latency over a matrix of cells", run: runBench},
	"check":             {summary: "run the store properties against a plugin", run: runCheck},
	"completion":        {summary: "print a shell completion script: kvharness completion bash (or zsh)", run: runCompletion},
	"compare":           {summary: "compare two bench.txt files, a verdict per cell; exit 1 when a cell is slower", run: runCompare},
	"fuzz":              {summary: "fuzz a plugin with go test -fuzz (needs the kvharness source and Go)", run: runFuzz},
	"fuzz-check":        {summary: "check a fuzz worker's inputs (go test -fuzz runs it for a kind's out-of-process lane)", run: runFuzzCheck, hidden: true},
	"gpu":               {summary: "show GPU telemetry: memory, clocks, peak bandwidth, power, throttling", run: runGPU},
	"merge":             {summary: "join the --shard parts of a bench night into one night", run: runMerge},
	"mutants":           {summary: "run the suite on every plugin and mutant: mutants must die, controls pass", run: runMutants},
	"plugins":           {summary: "list the bundled plugins and what they declare", run: runPlugins},
	"repro":             {summary: "replay a saved failing case and classify it again", run: runRepro},
	plugin.ServeCommand: {summary: "serve a bundled plugin from this binary (the harness runs it; so can a wrapper script)", run: runServe},
}

// run runs the command args name, its output checked: a write to stdout
// or stderr that fails stops the run and makes it exit 2 (checkOutput).
func run(ctx context.Context, stdout, stderr io.Writer, args []string) int {
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	out, errw := newCheckedWriter(stdout, "stdout", stop), newCheckedWriter(stderr, "stderr", stop)
	return checkOutput(runCommand(ctx, out, errw, args), out, errw)
}

func runCommand(ctx context.Context, stdout, stderr io.Writer, args []string) int {
	e := &env{stdout: stdout, stderr: stderr, commands: commands}
	if len(args) == 0 {
		usage(stdout)
		return exitPass
	}
	switch args[0] {
	case "help", "-h", "--help":
		return help(ctx, e, args[1:])
	case "version", "--version":
		writeVersion(stdout)
		return exitPass
	}
	c, ok := commands[args[0]]
	if !ok {
		return unknownCommand(e, args[0])
	}
	defer keepSourceEnv()()
	if sourceCommands[args[0]] { // the commands that start plugins
		if err := addressSpace(); err != nil {
			return e.errorf("%v", err)
		}
	}
	return exitCode(ctx, c.run(ctx, e, args[1:]))
}

// help prints the command list, or one command's help on stdout.
func help(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 || oneOf(args[0], "help", "-h", "--help") { // kvharness help help: the command list is help's help
		usage(e.stdout)
		return exitPass
	}
	c, ok := commands[args[0]]
	if !ok {
		return unknownCommand(e, args[0])
	}
	return c.run(ctx, e, []string{"--help"})
}

func unknownCommand(e *env, name string) int {
	if strings.HasPrefix(name, "-") {
		return e.errorf("%s before a command: flags follow the command, as in kvharness check --plugin fusedstore (kvharness help lists the commands)", name)
	}
	hint := ""
	if s := suggest(name, commandNames(false)); s != "" {
		hint = fmt.Sprintf("did you mean %s? ", s)
	}
	return e.errorf("unknown command %q; %skvharness help lists the commands", name, hint)
}

func commandNames(all bool) []string {
	var names []string
	for n, c := range commands {
		if all || !c.hidden {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

func usage(w io.Writer) {
	fmt.Fprint(w, `kvharness: fuzz, check and benchmark KV-cache kernels running as plugins.

Usage: kvharness COMMAND [flags]

Commands:
`)
	for _, n := range commandNames(false) {
		fmt.Fprintf(w, "  %-9s %s\n", n, commands[n].summary)
	}
	fmt.Fprint(w, `
Examples:
  kvharness check --plugin fusedstore
  kvharness check --plugin bf16scatter --padding sink
  kvharness repro kvharness-results/bf16scatter-bf16-sink-padding-1a2b3c4d.json
  kvharness mutants

Run kvharness help COMMAND (or kvharness COMMAND --help) for a command's flags,
kvharness --version for the build.

Exit status: 0 pass, 1 violation, 2 usage error, bad input or plugin fault,
130 interrupted.
`)
}

// flags makes a flag set whose --help prints the synopsis, the flags and
// the examples on stdout. Errors are parse's to print.
func flags(name, synopsis, examples string, e *env) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(e.stderr) // in ContinueOnError mode pflag prints nothing itself: parse prints errors
	fs.SortFlags = false
	addSourceFlag(fs)
	fs.Usage = func() {
		fmt.Fprintf(e.stdout, "Usage: kvharness %s %s\n\nFlags:\n%s\nExamples:\n%s", name, synopsis,
			fs.FlagUsages(), examples)
	}
	return fs
}

// parse parses flags; ok is false when the command should exit with code:
// 0 after --help, 2 after an error, which it prints as one line naming the
// flag and the fix.
func parse(fs *pflag.FlagSet, args []string) (code int, ok bool) {
	decimalOnly(fs)
	err := fs.Parse(args)
	if err == nil {
		err = checkValues(fs)
	}
	if err == nil {
		err = applySource(fs)
	}
	if err == pflag.ErrHelp {
		return exitPass, false
	}
	if err != nil {
		fmt.Fprintf(fs.Output(), "kvharness: %s\n", oneLine(flagError(fs, err)))
		return exitError, false
	}
	return 0, true
}

func oneOf(s string, allowed ...string) bool {
	for _, a := range allowed {
		if s == a {
			return true
		}
	}
	return false
}

func quoteList(xs []string) string { return strings.Join(xs, ", ") }
