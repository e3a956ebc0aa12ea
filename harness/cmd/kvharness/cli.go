package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/pflag"
)

// Exit codes: the contract CI and nightly jobs script against.
const (
	exitPass      = 0 // every property held
	exitViolation = 1 // an invariant was violated (or a mutant survived)
	exitError     = 2 // bad usage, bad input, or a plugin fault
)

// command is one subcommand.
type command struct {
	summary string
	run     func(ctx context.Context, env *env, args []string) int
}

// env is what every command writes to.
type env struct {
	stdout, stderr io.Writer
}

func (e *env) errorf(format string, args ...any) int {
	fmt.Fprintf(e.stderr, "kvharness: "+format+"\n", args...)
	return exitError
}

var commands = map[string]command{}

func register(name, summary string, run func(context.Context, *env, []string) int) {
	commands[name] = command{summary, run}
}

func run(ctx context.Context, stdout, stderr io.Writer, args []string) int {
	e := &env{stdout: stdout, stderr: stderr}
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stdout)
		return exitPass
	}
	c, ok := commands[args[0]]
	if !ok {
		usage(stderr)
		return e.errorf("unknown command %q", args[0])
	}
	return c.run(ctx, e, args[1:])
}

func usage(w io.Writer) {
	fmt.Fprint(w, `kvharness: fuzz, check and benchmark KV-cache store kernels running as plugins.

Usage: kvharness COMMAND [flags]

Commands:
`)
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-9s %s\n", n, commands[n].summary)
	}
	fmt.Fprint(w, `
Examples:
  kvharness check --plugin fusedstore
  kvharness check --plugin bf16scatter --padding sink
  kvharness repro kvharness-results/bf16scatter-bf16-sink-padding-1a2b3c4d.json
  kvharness mutants

Exit status: 0 pass, 1 violation, 2 usage error or plugin fault.
`)
}

// flags makes a flag set whose --help prints the examples too.
func flags(name, synopsis, examples string, e *env) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.SortFlags = false
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "Usage: kvharness %s %s\n\nFlags:\n%s\nExamples:\n%s", name, synopsis,
			fs.FlagUsages(), examples)
	}
	return fs
}

// parse parses flags; ok is false when the command should exit with code.
func parse(fs *pflag.FlagSet, args []string) (code int, ok bool) {
	err := fs.Parse(args)
	if errors.Is(err, pflag.ErrHelp) {
		return exitPass, false
	}
	if err != nil {
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
