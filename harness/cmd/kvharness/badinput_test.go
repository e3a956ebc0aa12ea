package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// badInput is one invocation a user could get wrong, and a word the one
// line it must be answered with has to hold: the flag, file or value at
// fault.
type badInput struct {
	args []string // $DIR is the case's folder; $FILE/NAME one of badFiles there
	want string
}

// The bad-input suite: every flag of the commands this package owns, every
// file parser, every resource limit. Each case must exit 2 with one line
// on stderr that names the input and says what to do, no stack trace,
// nothing on stdout, no file left in its folder or the package's, and no
// process left running.
var badInputs = []badInput{
	// The command line itself.
	{[]string{"chek"}, `"chek"; did you mean check?`},
	{[]string{"frobnicate"}, `unknown command "frobnicate"`},
	{[]string{"--verbose"}, "--verbose before a command"},
	{[]string{"help", "nosuch"}, `unknown command "nosuch"`},
	{[]string{"repo"}, "did you mean repro?"},
	{[]string{"mutant"}, "did you mean mutants?"},

	// check: flags pflag refuses.
	{[]string{"check", "--cases", "abc"}, `--cases "abc": want a whole number`},
	{[]string{"check", "--cases", "1.5"}, `--cases "1.5"`},
	{[]string{"check", "--cases", "99999999999999999999"}, `--cases "99999999999999999999"`},
	{[]string{"check", "--cases="}, `--cases ""`},
	// A composed check: a writer and a reader.
	{[]string{"check", "--writer", "gostore"}, "--writer gostore needs --reader"},
	{[]string{"check", "--reader", "gostore"}, "--reader gostore needs --writer"},
	{[]string{"check", "--reader-variant", "pow2-scale-read"}, "need --writer and --reader"},
	{[]string{"check", "--writer", "gostore", "--reader", "gostore", "--plugin", "gostore"}, "--plugin does not apply to --writer/--reader"},
	{[]string{"check", "--writer", "gostore", "--reader", "gostore", "--variant", "x"}, "give --writer-variant or --reader-variant"},
	{[]string{"check", "--writer", "gostore", "--reader", "gostore", "--graph"}, "--graph does not apply"},
	{[]string{"check", "--writer", "gostore", "--reader", "gostore", "--layout", "engines"}, "--layout engines"},
	{[]string{"check", "--writer", "gostore", "--reader", "gostore", "--reader-layout", "fp8-rows"}, "--reader-layout fp8-rows needs the writer's layout"},
	{[]string{"check", "--writer", "gostore", "--reader", "gostore", "--padding", "some"}, `--padding "some"`},
	{[]string{"check", "--writer", "gostore", "--reader", "fp8store", "--layout", "bf16"}, "the reader fp8store does not read layout bf16, which the writer gostore writes"},
	{[]string{"check", "--writer", "gostore", "--reader", "gostore", "--layout", "fp8-paged", "--reader-layout", "bf16"}, "are not one cache"},
	{[]string{"check", "--writer", "fp8store", "--reader", "gostore", "--layout", "bf16"}, "the writer fp8store does not store layout bf16"},
	{[]string{"check", "--writer", "gostore", "--reader", "recipestore", "--layout", "fp8-paged"}, "--reader recipestore has no read kernel"},
	{[]string{"check", "--plugn", "fusedstore"}, "--plugn; did you mean --plugin?"},
	{[]string{"check", "--plugin"}, "--plugin needs a value"},
	{[]string{"check", "--seed", "abc"}, `--seed "abc"`},
	{[]string{"check", "--seed", "1e3"}, `--seed "1e3"`},
	{[]string{"check", "--slots", "abc"}, `--slots "abc"`},
	{[]string{"check", "--head-dim", "abc"}, `--head-dim "abc"`},
	{[]string{"check", "--page-size", "abc"}, `--page-size "abc"`},
	{[]string{"check", "--max-capacity", "lots"}, `--max-capacity "lots"`},
	{[]string{"check", "--timeout", "abc"}, `--timeout "abc": want a duration`},
	{[]string{"check", "--timeout", "10"}, `--timeout "10"`},
	{[]string{"check", "--timeout", "0"}, "--timeout 0s: want a positive duration"},
	{[]string{"check", "--timeout", "-1s"}, "--timeout -1s: want a positive duration"},
	{[]string{"check", "--json=maybe"}, `--json "maybe": want true or false`},
	{[]string{"check", "--graph=2"}, `--graph "2"`},
	{[]string{"check", "--no-mtls=x"}, `--no-mtls "x"`},
	{[]string{"check", "--device", "abc"}, `--device "abc"`},
	{[]string{"check", "--jobs", "abc"}, `--jobs "abc"`},
	{[]string{"check", "--max-faults", "abc"}, `--max-faults "abc"`},
	{[]string{"check", "-p", "fusedstore"}, "unknown flag -p"},
	{[]string{"check", "---plugin", "x"}, "bad flag syntax"},
	{[]string{"check", "--layotu", "bf16"}, "did you mean --layout?"},
	{[]string{"check", "--padding"}, "--padding needs a value"},
	// check: values the command refuses.
	{[]string{"check"}, "--plugin is required"},
	{[]string{"check", "--plugin", "fusedstore", "extra"}, `unexpected argument "extra"`},
	{[]string{"check", "--plugin", "fusedstore", "--cases", "0"}, "--cases 0"},
	{[]string{"check", "--plugin", "fusedstore", "--cases", "-5"}, "--cases -5"},
	{[]string{"check", "--plugin", "fusedstore", "--slots", "1"}, "--slots 1"},
	{[]string{"check", "--plugin", "fusedstore", "--slots", "-1"}, "--slots -1"},
	{[]string{"check", "--plugin", "fusedstore", "--head-dim", "0"}, "--head-dim 0"},
	{[]string{"check", "--plugin", "fusedstore", "--head-dim", "100"}, "--head-dim 100: want a multiple of 8"},
	{[]string{"check", "--plugin", "fusedstore", "--head-dim", "7"}, "--head-dim 7"},
	{[]string{"check", "--plugin", "fusedstore", "--head-dim", "121"}, "--head-dim 121"},
	{[]string{"check", "--plugin", "fusedstore", "--head-dim", "9000"}, "--head-dim 9000"},
	{[]string{"check", "--plugin", "fusedstore", "--head-dim", "-128"}, "--head-dim -128"},
	{[]string{"check", "--plugin", "fusedstore", "--page-size", "0"}, "--page-size 0"},
	{[]string{"check", "--plugin", "fusedstore", "--shard", "abc"}, `--shard "abc": want i/n`},
	{[]string{"check", "--plugin", "fusedstore", "--shard", "0/3"}, "--shard 0/3: want 1 ≤ i ≤ n"},
	{[]string{"check", "--plugin", "fusedstore", "--shard", "4/3"}, "--shard 4/3"},
	{[]string{"check", "--plugin", "fusedstore", "--layout", "bf16", "--padding", "sink", "--shard", "2/2"}, "--shard 2/2 owns no row"},
	{[]string{"check", "--plugin", "fusedstore", "--page-size", "-1"}, "--page-size -1"},
	{[]string{"check", "--plugin", "fusedstore", "--page-size", "70000"}, "--page-size 70000"},
	{[]string{"check", "--plugin", "fusedstore", "--max-capacity", "0"}, "--max-capacity 0"},
	{[]string{"check", "--plugin", "fusedstore", "--max-capacity", "2000000"}, "--max-capacity 2000000"},
	{[]string{"check", "--plugin", "fusedstore", "--jobs", "-1"}, "--jobs -1"},
	{[]string{"check", "--plugin", "fusedstore", "--jobs", "65"}, "--jobs 65"},
	{[]string{"check", "--plugin", "fusedstore", "--max-faults", "0"}, "--max-faults 0"},
	{[]string{"check", "--plugin", "fusedstore", "--device", "-1"}, "--device -1"},
	{[]string{"check", "--plugin", "fusedstore", "--backend", "gpu"}, `--backend "gpu"`},
	{[]string{"check", "--plugin", "fusedstore", "--backend", ""}, `--backend ""`},
	{[]string{"check", "--plugin", "fusedstore", "--padding", "zero"}, `--padding "zero"`},
	{[]string{"check", "--plugin", "fusedstore", "--padding", ""}, `--padding ""`},
	{[]string{"check", "--plugin", "fusedstore", "--value", "bitwise"}, `--value "bitwise": want recipe or exact`},
	{[]string{"check", "--plugin", "fusedstore", "--value", ""}, `--value ""`},
	{[]string{"check", "--plugin", "fusedstore", "--layout", "bf16", "--layout-file", "x.json"}, "--layout and --layout-file conflict"},
	{[]string{"check", "--plugin", "fusedstore", "--plugin-sha256", "xyz"}, `--plugin-sha256 "xyz": want 64 hex digits`},
	{[]string{"check", "--plugin", "fusedstore", "--plugin-sha256", "abcd"}, `--plugin-sha256 "abcd"`},
	{[]string{"check", "--plugin", "fusedstore", "--plugin-sha256", strings.Repeat("0", 64)}, "pinned 0000"},
	{[]string{"check", "--plugin", "fusedstore", "--results", "$FILE/plain.txt"}, "is a file, not a folder"},
	{[]string{"check", "--plugin", "fusedstore", "--results", "$FILE/plain.txt/sub"}, "is a file, not a folder"},
	{[]string{"check", "--plugin", "fusedstore", "--graph", "--backend", "cpu"}, "--graph needs the cuda backend"},
	// check: plugins that are not there.
	{[]string{"check", "--plugin", "nosuchplugin"}, `"nosuchplugin" is neither a bundled plugin`},
	{[]string{"check", "--plugin", "./nonexistent"}, `"./nonexistent"`},
	{[]string{"check", "--plugin", "$FILE/plain.txt"}, "plain.txt"},
	{[]string{"check", "--plugin", "$DIR"}, "neither a bundled plugin"},
	{[]string{"check", "--plugin", `python3 "unterminated`}, "unterminated"},
	{[]string{"check", "--plugin", "nosuchinterpreter script.py"}, "nosuchinterpreter"},
	{[]string{"check", "--plugin", "$DIR/missing.json"}, "missing.json"},
	{[]string{"check", "--plugin", "fusedstore", "--kernel", "nosuch"}, "no nosuch kernel"},
	{[]string{"check", "--plugin", "bf16scatter", "--kernel", "transfer"}, "no transfer kernel"},
	{[]string{"check", "--plugin", "fusedstore", "--layout", "fp4"}, "fp4"},
	// check: resource limits.
	{[]string{"check", "--plugin", "fusedstore", "--backend", "cpu", "--slots", "2000000000"}, "2000000000 slots"},
	{[]string{"check", "--plugin", "fusedstore", "--backend", "cpu", "--layout", "bf16", "--slots", "40000000"}, "--slots 40000000"},

	// Layout files.
	{[]string{"check", "--plugin", "fusedstore", "--layout-file", "$DIR/nonexistent.json"}, "nonexistent.json"},
	{[]string{"check", "--plugin", "fusedstore", "--layout-file", "/dev/zero"}, "/dev/zero"},
	{[]string{"check", "--plugin", "fusedstore", "--layout-file", "$FILE/empty.json"}, "empty.json"},
	{[]string{"check", "--plugin", "fusedstore", "--layout-file", "$FILE/truncated-layout.json"}, "truncated-layout.json"},
	{[]string{"check", "--plugin", "fusedstore", "--layout-file", "$FILE/two-layouts.json"}, "after the first JSON value"},
	{[]string{"check", "--plugin", "fusedstore", "--layout-file", "$FILE/typo-layout.json"}, `unknown field "head_dm"`},
	{[]string{"check", "--plugin", "fusedstore", "--layout-file", "$FILE/huge-pad.json"}, `pad field "p"`},
	{[]string{"check", "--plugin", "fusedstore", "--layout-file", "$FILE/dim100.json"}, "head dim 100"},
	{[]string{"check", "--plugin", "fusedstore", "--layout-file", "$FILE/binary.json"}, "binary.json"},
	{[]string{"check", "--plugin", "fusedstore", "--layout-file", "$DIR"}, "layout file"},
	{[]string{"check", "--plugin", "fusedstore", "--layout-file", "$FILE/no-planes.json"}, "no planes"},
	{[]string{"check", "--plugin", "fusedstore", "--layout-file", "$FILE/bad-kind.json"}, `unknown kind "fp4"`},
	{[]string{"check", "--plugin", "fusedstore", "--layout-file", "$FILE/huge-align.json"}, "page align"},
	{[]string{"check", "--plugin", "fp8store", "--layout-file", "$FILE/bad-recipe.json"}, "recipe eps 2"},
	{[]string{"check", "--plugin", "fp8store", "--layout-file", "$FILE/bad-policy.json"}, `pad policy "ones"`},
	{[]string{"check", "--plugin", "fusedstore", "--layout-file", "$FILE/big-file.json"}, "more than"},
	{[]string{"check", "--plugin", "fusedstore", "--layout-file", "$FILE/array.json"}, "array.json"},

	// Plugin manifests.
	{[]string{"check", "--plugin", "$FILE/manifest-empty.json"}, "manifest-empty.json"},
	{[]string{"check", "--plugin", "$FILE/manifest-nocommand.json"}, "no command"},
	{[]string{"check", "--plugin", "$FILE/manifest-two.json"}, "after the first JSON value"},
	{[]string{"check", "--plugin", "$FILE/manifest-typo.json"}, `unknown field "comand"`},
	{[]string{"check", "--plugin", "$FILE/manifest-badsum.json"}, "want 64 hex digits"},
	{[]string{"check", "--plugin", "$FILE/manifest-nosuchexe.json"}, "nosuchexe"},
	{[]string{"check", "--plugin", "$FILE/manifest-big.json"}, "more than"},

	// repro: flags and files.
	{[]string{"repro"}, "want exactly one repro file, got 0"},
	{[]string{"repro", "a.json", "b.json"}, "got 2 arguments"},
	{[]string{"repro", "$DIR/nonexistent.json"}, "nonexistent.json"},
	{[]string{"repro", "/dev/zero"}, "/dev/zero"},
	{[]string{"repro", "$DIR"}, "repro file"},
	{[]string{"repro", "$FILE/empty.json"}, "no JSON value"},
	{[]string{"repro", "$FILE/repro-truncated.json"}, "repro-truncated.json"},
	{[]string{"repro", "$FILE/repro-future.json"}, "newer than this kvharness reads"},
	{[]string{"repro", "$FILE/repro-noversion.json"}, "no format version"},
	{[]string{"repro", "$FILE/repro-nocase.json"}, "no case"},
	{[]string{"repro", "$FILE/repro-badslot.json"}, "valid slot 99 outside"},
	{[]string{"repro", "$FILE/repro-typo.json"}, `unknown field "plugn"`},
	{[]string{"repro", "$FILE/repro-two.json"}, "after the first JSON value"},
	{[]string{"repro", "$FILE/repro-kernel.json"}, "nosuchkernel"},
	{[]string{"repro", "$FILE/repro-badlayout.json"}, "repro-badlayout.json"},
	{[]string{"repro", "$FILE/repro-path.json"}, "runs no command from it: give --plugin"},
	{[]string{"repro", "$FILE/repro-command.json"}, "runs no command from it"},
	{[]string{"repro", "$FILE/repro-capacity.json"}, "capacity"},
	{[]string{"repro", "$FILE/repro-duplicate.json"}, "already taken"},
	{[]string{"repro", "$FILE/repro-padding.json"}, "padding"},
	{[]string{"repro", "$FILE/repro-big.json"}, "more than"},
	{[]string{"repro", "$FILE/repro-ok.json", "--timeout", "0"}, "--timeout 0s"},
	{[]string{"repro", "$FILE/repro-ok.json", "--timeout", "-3s"}, "--timeout -3s"},
	{[]string{"repro", "$FILE/repro-ok.json", "--plugin-sha256", "nothex"}, "--plugin-sha256"},
	{[]string{"repro", "$FILE/repro-ok.json", "--plugin", "nosuchplugin"}, "nosuchplugin"},
	{[]string{"repro", "$FILE/repro-ok.json", "--variant"}, "--variant needs a value"},
	{[]string{"repro", "$FILE/repro-ok.json", "--plugn", "x"}, "did you mean --plugin?"},
	{[]string{"repro", "$FILE/repro-ok.json", "--plugin-from-file=yes"}, `--plugin-from-file "yes"`},
	{[]string{"repro", "$FILE/repro-ok.json", "--kernel", "store"}, "unknown flag --kernel"},
	{[]string{"repro", "$FILE/repro-ok.json", "--value", "close"}, `--value "close": want recipe or exact`},

	// check and plugins at a head count.
	{[]string{"check", "--plugin", "fusedstore", "--heads", "-1"}, "--heads -1"},
	{[]string{"check", "--plugin", "fusedstore", "--layout", "bf16", "--heads", "8"}, `layout "bf16" has one head per token, not 8`},
	{[]string{"plugins", "--heads", "0"}, "--heads 0: want 1.."},

	// mutants.
	{[]string{"mutants", "--cases", "0"}, "--cases 0"},
	{[]string{"mutants", "--cases", "x"}, `--cases "x"`},
	{[]string{"mutants", "--slots", "1"}, "--slots 1"},
	{[]string{"mutants", "--max-capacity", "0"}, "--max-capacity 0"},
	{[]string{"mutants", "--max-capacity", "9999999"}, "--max-capacity 9999999"},
	{[]string{"mutants", "--plugin", "bf16scatter,nosuch", "--cases", "20"}, `"nosuch" is neither a bundled plugin`}, // before bf16scatter runs
	{[]string{"mutants", "--backend", "tpu"}, `--backend "tpu"`},
	{[]string{"mutants", "--device", "-2"}, "--device -2"},
	{[]string{"mutants", "--seed", "x"}, `--seed "x"`},
	{[]string{"mutants", "--no-times=x"}, `--no-times "x"`},
	{[]string{"mutants", "stray"}, `unexpected argument "stray"`},
	{[]string{"mutants", "--plugin", "nosuchplugin"}, "nosuchplugin"},
	{[]string{"mutants", "--plugin", ""}, "--plugin: give at least one plugin"},
	{[]string{"mutants", "--case", "10"}, "did you mean --cases?"},
	{[]string{"mutants", "--value", "tolerant"}, `--value "tolerant": want recipe or exact`},
	{[]string{"mutants", "--head-dim", "100"}, "--head-dim 100"},
	{[]string{"mutants", "--head-dim", "x"}, `--head-dim "x"`},

	// plugins, gpu, fuzz, serve-plugin.
	{[]string{"plugins", "--head-dim", "abc"}, `--head-dim "abc"`},
	{[]string{"plugins", "--head-dim", "100"}, "--head-dim 100"},
	{[]string{"plugins", "--page-size", "0"}, "--page-size 0"},
	{[]string{"plugins", "--plugin", "nosuchplugin"}, "nosuchplugin"},
	{[]string{"plugins", "--plugin", "nosuchplugin", "--sha256"}, "nosuchplugin"},
	{[]string{"plugins", "--sha256=x"}, `--sha256 "x"`},
	{[]string{"plugins", "stray"}, `unexpected argument "stray"`},
	{[]string{"plugins", "--json=1x"}, `--json "1x"`},
	{[]string{"gpu", "--json=x"}, `--json "x"`},
	{[]string{"gpu", "stray"}, `unexpected argument "stray"`},
	{[]string{"gpu", "--jsn"}, "did you mean --json?"},
	{[]string{"fuzz", "--lane", "sideways"}, `--lane "sideways"`},
	{[]string{"fuzz", "--time", "0"}, "--time 0s"},
	{[]string{"fuzz", "--time", "abc"}, `--time "abc"`},
	{[]string{"fuzz", "--parallel", "-1"}, "--parallel -1"},
	{[]string{"fuzz", "--parallel", "x"}, `--parallel "x"`},
	{[]string{"fuzz", "stray"}, `unexpected argument "stray"`},
	{[]string{"serve-plugin"}, "want one bundled plugin name"},
	{[]string{"serve-plugin", "a", "b"}, "got 2 arguments"},
	{[]string{"serve-plugin", "nosuch"}, `no bundled plugin "nosuch"`},
	{[]string{"serve-plugin", "--port", "1"}, "unknown flag --port"},

	// bench and compare: what the command-line framework refuses for them.
	{[]string{"bench", "--tokns", "5"}, "did you mean --tokens?"},
	{[]string{"bench", "--timeout", "0"}, "--timeout 0s: want a positive duration"},
	{[]string{"bench", "--timeout", "60"}, `--timeout "60": want a duration with a unit`},
	{[]string{"bench", "--max-time", "-1s"}, "--max-time -1s: want a positive duration"},
	{[]string{"bench", "--max-time", "20"}, `--max-time "20": want a duration with a unit (300ms, 10s, 2m), as in --max-time 10s`},
	{[]string{"bench", "--min-time", "0.5"}, `--min-time "0.5": want a duration with a unit`},
	{[]string{"compare", "--alpha", "1s", "a", "b"}, `--alpha "1s": want a number, as in --alpha`},
	{[]string{"bench", "--rotate", "x"}, `--rotate "x"`},
	{[]string{"bench", "--plugin"}, "--plugin needs a value"},
	{[]string{"compare", "--alpha", "x", "a", "b"}, `--alpha "x": want a number`},
	{[]string{"compare", "--alpha", "NaN", "a", "b"}, "--alpha NaN: want a finite number"},
	{[]string{"compare", "--alpha", "+Inf", "a", "b"}, "--alpha +Inf: want a finite number"},
	{[]string{"compare", "--threshold", "NaN", "a", "b"}, "--threshold NaN"},
	{[]string{"compare", "--threshold", "-0.1", "a", "b"}, "--threshold -0.1"},
	{[]string{"compare", "--latency-threshold", "-1", "a", "b"}, "--latency-threshold -1"},
	{[]string{"compare", "--ignore"}, "--ignore needs a value"},

	// No code from the working directory: another source tree only when
	// named, and only a kvharness tree.
	{[]string{"check", "--plugin-source", "$DIR", "--plugin", "bf16scatter"}, "want the folder of a kvharness checkout"},
	{[]string{"check", "--plugin-source", "$FILE/plain.txt", "--plugin", "bf16scatter"}, "is not a folder"},
	{[]string{"repro", "$FILE/repro-ok.json", "--plugin-source", "$DIR/nosuch"}, "is not a folder"},
	{[]string{"mutants", "--plugin-source", "$DIR"}, "holds no go.mod of module"},
	{[]string{"bench", "--plugin-source", "$DIR"}, "holds no go.mod of module"},
	{[]string{"plugins", "--plugin-source", "$FILE/hostile-gomod/go.mod"}, "is not a folder"},
	{[]string{"fuzz", "--plugin-source", "$DIR"}, "holds no go.mod of module"},
	{[]string{"gpu", "--plugin-source", "$DIR"}, "unknown flag --plugin-source"},
	{[]string{"compare", "--plugin-source", "x", "a", "b"}, "unknown flag --plugin-source"},

	// Inputs that are no regular file are refused at once: a FIFO with no
	// writer would hang a read forever.
	{[]string{"check", "--plugin", "fusedstore", "--layout-file", "$FILE/fifo"}, "is not a regular file (a FIFO)"},
	{[]string{"repro", "$FILE/fifo"}, "is not a regular file (a FIFO)"},
	{[]string{"check", "--plugin", "$FILE/fifo.json"}, "is not a regular file (a FIFO)"},
	{[]string{"bench", "--matrix", "$FILE/fifo"}, "is not a regular file (a FIFO)"},
	{[]string{"compare", "$FILE/fifo", "$FILE/bench-a.txt"}, "is not a regular file (a FIFO)"},
	{[]string{"compare", "$FILE/bench-a.txt", "$FILE/fifo"}, "is not a regular file (a FIFO)"},
	{[]string{"compare", "/dev/zero", "$FILE/bench-a.txt"}, "is not a regular file (a character device)"},
	{[]string{"merge", "--out", "$DIR/night", "$FILE/shard-fifo"}, "is not a regular file (a FIFO)"},
	{[]string{"repro", "/dev/null"}, "is not a regular file"},
	{[]string{"merge", "--out", "$DIR/night", "$FILE/shard-dup"}, `duplicate key "schema"`},
	{[]string{"check", "--plugin", "fusedstore", "--results", "$FILE/fifo"}, "is a file, not a folder"},

	// No command writes over what it reads.
	{[]string{"merge", "--out", "$FILE/shard-fifo", "$FILE/shard-fifo"}, "would write over shard"},
	{[]string{"merge", "--out", "$FILE/shard-fifo/", "$FILE/shard-fifo"}, "would write over shard"},
	{[]string{"bench", "--out", "$FILE/night", "--matrix", "$FILE/night/night.json"}, "would write over --matrix"},

	// Strict files: a key twice, a value out of range, a field not there.
	{[]string{"repro", "$FILE/repro-dupkey.json"}, `duplicate key "slots"`},
	{[]string{"repro", "$FILE/repro-dupcase.json"}, `duplicate key "case.valid"`},
	{[]string{"repro", "$FILE/repro-negseed.json"}, "background_seed -1: want 0 or more"},
	{[]string{"repro", "$FILE/repro-slots0.json"}, "slots 0: want 1.."},
	{[]string{"repro", "$FILE/repro-value.json"}, `value "fuzzy": want recipe or exact`},
	{[]string{"repro", "$FILE/repro-found-property.json"}, "found.property"},
	{[]string{"repro", "$FILE/repro-found-violations.json"}, "found.violations"},
	{[]string{"repro", "$FILE/repro-found-seed.json"}, "found.seed -3"},
	{[]string{"repro", "$FILE/repro-found-junk.json"}, `unknown field "junk"`},
	{[]string{"repro", "$FILE/repro-escape-plugin.json"}, "want printable names"},
	{[]string{"repro", "$FILE/repro2-nobackend.json"}, `backend "": want "cpu" or "cuda"`},
	{[]string{"repro", "$FILE/repro2-tpu.json"}, `backend "tpu"`},
	{[]string{"repro", "$FILE/repro2-graph-cpu.json"}, "CUDA graphs need backend"},
	{[]string{"repro", "$FILE/repro2-ordinal.json"}, "device_ordinal -1"},
	{[]string{"repro", "$FILE/repro2-headdim.json"}, "head_dim -16"},
	{[]string{"repro", "$FILE/repro2-pagesize.json"}, "page_size 70000"},
	{[]string{"repro", "$FILE/repro2-capacity.json"}, "max_capacity -5"},
	{[]string{"repro", "$FILE/repro2-slotbits.json"}, "slot_bits 48: want 32 or 64"},
	{[]string{"repro", "$FILE/repro2-device.json"}, `device "H100`},
	{[]string{"repro", "$FILE/repro2-identity.json"}, "plugin_identity"},
	{[]string{"repro", "$FILE/repro2-sha.json"}, "plugin_identity.sha256"},
	{[]string{"repro", "$FILE/repro1-backend.json"}, "a version 1 file records no backend"},
	{[]string{"check", "--plugin", "fusedstore", "--layout-file", "$FILE/page0-layout.json"}, "page_size 0"},
	{[]string{"check", "--plugin", "fusedstore", "--layout-file", "$FILE/dupkey-layout.json"}, `duplicate key "head_dim"`},
	{[]string{"check", "--plugin", "fusedstore", "--layout-file", "$FILE/escape-layout.json"}, "want a name of printable characters"},
	{[]string{"check", "--plugin", "$FILE/manifest-dup.json"}, `duplicate key "command"`},
	{[]string{"check", "--plugin", "$FILE/manifest-emptyword.json"}, "command[1]"},
	{[]string{"check", "--plugin", "$FILE/manifest-escape.json"}, "want printable characters"},
	{[]string{"bench", "--matrix", "$FILE/matrix-dup.json"}, `duplicate key "slots"`},
	{[]string{"compare", "--metric", "nosuch", "--strict", "$FILE/bench-a.txt", "$FILE/bench-a.txt"}, "--metric nosuch: neither file has that unit"},
	{[]string{"compare", "--metric", "GB/s", "$FILE/bench-a.txt", "$FILE/bench-a.txt"}, "--metric GB/s"},

	// Whole numbers in decimal only; no negative counts or seeds; seconds
	// within a year.
	{[]string{"check", "--cases", "010"}, `--cases "010": want a whole number written in decimal`},
	{[]string{"check", "--slots", "0x10"}, `--slots "0x10"`},
	{[]string{"check", "--max-capacity", "0o7"}, `--max-capacity "0o7"`},
	{[]string{"check", "--seed", "-5"}, "--seed -5: want 0 or more"},
	{[]string{"check", "--head-dim", "0128"}, `--head-dim "0128"`},
	{[]string{"mutants", "--cases", "010"}, `--cases "010"`},
	{[]string{"mutants", "--seed", "-1"}, "--seed -1: want 0 or more"},
	{[]string{"repro", "$FILE/repro-ok.json", "--count", "0x2"}, `--count "0x2"`},
	{[]string{"bench", "--passes", "010"}, `--passes "010"`},
	{[]string{"bench", "--timeout", "1e308"}, `--timeout "1e308": want a duration with a unit`},
	{[]string{"bench", "--min-time", "1e12"}, `--min-time "1e12": want a duration with a unit`},
	{[]string{"bench", "--max-time", "9999999h"}, "--max-time"},
	{[]string{"fuzz", "--parallel", "010"}, `--parallel "010"`},
	{[]string{"plugins", "--page-size", "0x40"}, `--page-size "0x40"`},

	// mutants refuses what does not fit as check does.
	{[]string{"mutants", "--plugin", "fusedstore", "--backend", "cpu", "--slots", "2000000000"}, "2000000000 slots"},
}

// badFiles are the inputs the cases above name as $FILE/NAME.
var badFiles = map[string]string{
	"plain.txt":               "not a folder\n",
	"empty.json":              "",
	"truncated-layout.json":   `{"name":"x","head_dim":16,`,
	"two-layouts.json":        `{"name":"x","head_dim":16,"fields":[{"name":"v","kind":"bf16","to":16}],"planes":[["v"]]} {"name":"y"}`,
	"typo-layout.json":        `{"name":"x","head_dm":16}`,
	"huge-pad.json":           `{"name":"x","head_dim":16,"page_size":65536,"fields":[{"name":"v","kind":"bf16","to":16},{"name":"p","kind":"pad","bytes":281474976710656}],"planes":[["v","p"]]}`,
	"dim100.json":             `{"name":"x","head_dim":100,"fields":[{"name":"v","kind":"bf16","to":100}],"planes":[["v"]]}`,
	"binary.json":             "\x7fELF\x02\x01\x01\x00\x00\x00",
	"no-planes.json":          `{"name":"x","head_dim":16,"fields":[{"name":"v","kind":"bf16","to":16}]}`,
	"bad-kind.json":           `{"name":"x","head_dim":16,"fields":[{"name":"v","kind":"fp4","to":16}],"planes":[["v"]]}`,
	"huge-align.json":         `{"name":"x","head_dim":16,"page_align":4611686018427387904,"fields":[{"name":"v","kind":"bf16","to":16}],"planes":[["v"]]}`,
	"bad-recipe.json":         `{"name":"x","head_dim":32,"fields":[{"name":"v","kind":"e4m3","to":32,"group":16,"recipe":{"eps":2}},{"name":"s","kind":"scale-f32","of":"v"}],"planes":[["v","s"]]}`,
	"bad-policy.json":         `{"name":"x","head_dim":32,"fields":[{"name":"v","kind":"e4m3","to":32,"group":16},{"name":"s","kind":"scale-f32","of":"v"},{"name":"p","kind":"pad","bytes":8,"policy":"ones"}],"planes":[["v","s","p"]]}`,
	"big-file.json":           bigFile + "2097152",
	"array.json":              `[1, 2, 3]`,
	"manifest-empty.json":     "",
	"manifest-nocommand.json": `{"name": "x"}`,
	"manifest-two.json":       `{"name": "x", "command": ["true"]} {"name": "y"}`,
	"manifest-typo.json":      `{"name": "x", "comand": ["true"]}`,
	"manifest-badsum.json":    `{"name": "x", "command": ["true"], "sha256": {"plugin.py": "beef"}}`,
	"manifest-nosuchexe.json": `{"name": "x", "command": ["nosuchexe"]}`,
	"manifest-big.json":       bigFile + "2097152",
	"repro-truncated.json":    `{"version": 1, "kernel": "store", "plugin": "fusedstore", "slots": 8, "case": {"padding": "none"`,
	"repro-future.json":       `{"version": 9, "kernel": "store"}`,
	"repro-noversion.json":    `{"kernel": "store", "case": {}}`,
	"repro-nocase.json":       `{"version": 1, "kernel": "store", "plugin": "fusedstore"}`,
	"repro-badslot.json":      reproWith(`"plugin": "fusedstore"`, `{"padding": "none", "valid": 1, "loc": [99], "rows": [{"kind": "normal", "seed": 1}]}`),
	"repro-typo.json":         `{"version": 1, "plugn": "fusedstore"}`,
	"repro-two.json":          reproWith(`"plugin": "fusedstore"`, okCase) + ` {"version": 1}`,
	"repro-kernel.json":       strings.Replace(reproWith(`"plugin": "fusedstore"`, okCase), `"kernel": "store"`, `"kernel": "nosuchkernel"`, 1),
	"repro-badlayout.json":    strings.Replace(reproWith(`"plugin": "fusedstore"`, okCase), `"head_dim": 16`, `"head_dim": 100`, 1),
	"repro-path.json":         reproWith(`"plugin": "./mybuggy"`, okCase),
	"repro-command.json":      reproWith(`"plugin": "sh -c 'touch /tmp/kvharness-pwned'"`, okCase),
	"repro-capacity.json":     reproWith(`"plugin": "fusedstore"`, `{"padding": "none", "valid": 0, "loc": [], "rows": []}`),
	"repro-duplicate.json":    reproWith(`"plugin": "fusedstore"`, `{"padding": "none", "valid": 2, "loc": [3, 3], "rows": [{"kind": "normal", "seed": 1}, {"kind": "normal", "seed": 2}]}`),
	"repro-padding.json":      reproWith(`"plugin": "fusedstore"`, `{"padding": "none", "valid": 1, "loc": [3, 4], "rows": [{"kind": "normal", "seed": 1}, {"kind": "normal", "seed": 2}]}`),
	"repro-big.json":          bigFile + "68157440",
	"repro-ok.json":           reproWith(`"plugin": "fusedstore"`, okCase),

	"fifo":                        fifoFile,
	"fifo.json":                   fifoFile,
	"shard-fifo/night.json":       fifoFile,
	"shard-dup/night.json":        `{"schema": "a", "schema": "b"}`,
	"night/night.json":            `{"version": 1}`,
	"hostile-gomod/go.mod":        "module github.com/kvharness/kvharness\n",
	"bench-a.txt":                 "goos: linux\n" + strings.Repeat("BenchmarkStore/a-2 \t 100\t 1000 ns/op\n", 6),
	"repro-dupkey.json":           strings.Replace(reproWith(`"plugin": "fusedstore"`, okCase), `"slots": 8,`, `"slots": 8, "slots": 9,`, 1),
	"repro-dupcase.json":          reproWith(`"plugin": "fusedstore"`, `{"padding": "none", "valid": 1, "loc": [3], "valid": 1, "rows": [{"kind": "normal", "seed": 1}]}`),
	"repro-negseed.json":          strings.Replace(reproWith(`"plugin": "fusedstore"`, okCase), `"background_seed": 1`, `"background_seed": -1`, 1),
	"repro-slots0.json":           strings.Replace(reproWith(`"plugin": "fusedstore"`, okCase), `"slots": 8`, `"slots": 0`, 1),
	"repro-value.json":            strings.Replace(reproWith(`"plugin": "fusedstore"`, okCase), `"slots": 8`, `"slots": 8, "value": "fuzzy"`, 1),
	"repro-found-property.json":   reproFound(`{"property": "\u001b[2J", "seed": 1, "case_index": 1, "shrinks": 0, "violations": []}`),
	"repro-found-violations.json": reproFound(`{"property": "padding", "seed": 1, "case_index": 1, "shrinks": 0, "violations": "none"}`),
	"repro-found-seed.json":       reproFound(`{"property": "padding", "seed": -3, "case_index": 1, "shrinks": 0, "violations": null}`),
	"repro-found-junk.json":       reproFound(`{"property": "padding", "seed": 1, "junk": true, "violations": null}`),
	"repro-escape-plugin.json":    reproWith(`"plugin": "fusedstore", "variant": "v\u001b]0;x\u0007"`, okCase),
	"repro2-nobackend.json":       reproV2(`"graph": false`),
	"repro2-tpu.json":             reproV2(`"backend": "tpu"`),
	"repro2-graph-cpu.json":       reproV2(`"backend": "cpu", "graph": true`),
	"repro2-ordinal.json":         reproV2(`"backend": "cuda", "device_ordinal": -1`),
	"repro2-headdim.json":         reproV2(`"backend": "cpu", "head_dim": -16`),
	"repro2-pagesize.json":        reproV2(`"backend": "cpu", "page_size": 70000`),
	"repro2-capacity.json":        reproV2(`"backend": "cpu", "max_capacity": -5`),
	"repro2-slotbits.json":        reproV2(`"backend": "cpu", "slot_bits": 48`),
	"repro2-device.json":          reproV2(`"backend": "cuda", "device": "H100\u001b]0;x\u0007"`),
	"repro2-identity.json":        reproV2(`"backend": "cpu", "plugin_identity": {"name": "fusedstore\u001b[2J", "version": "1"}`),
	"repro2-sha.json":             reproV2(`"backend": "cpu", "plugin_identity": {"name": "fusedstore", "version": "1", "sha256": "xyz"}`),
	"repro1-backend.json":         strings.Replace(reproWith(`"plugin": "fusedstore"`, okCase), `"slots": 8`, `"slots": 8, "backend": "cpu"`, 1),
	"page0-layout.json":           `{"name":"x","head_dim":16,"page_size":0,"fields":[{"name":"v","kind":"bf16","to":16}],"planes":[["v"]]}`,
	"dupkey-layout.json":          `{"name":"x","head_dim":16,"head_dim":32,"fields":[{"name":"v","kind":"bf16","to":16}],"planes":[["v"]]}`,
	"escape-layout.json":          `{"name":"x\u001b]0;pwned\u0007","head_dim":16,"fields":[{"name":"v","kind":"bf16","to":16}],"planes":[["v"]]}`,
	"manifest-dup.json":           `{"name": "x", "command": ["true"], "command": ["sh"]}`,
	"manifest-emptyword.json":     `{"name": "x", "command": ["true", ""]}`,
	"manifest-escape.json":        `{"name": "x\u001b[2J", "command": ["true"]}`,
	"matrix-dup.json":             `{"plugins": ["fusedstore"], "slots": 64, "slots": 128}`,
}

// fifoFile marks a file made as a FIFO (no writer: a read of it would
// wait forever).
const fifoFile = "\x00fifo"

// reproFound is the ok repro file with found set to found.
func reproFound(found string) string {
	return strings.Replace(reproWith(`"plugin": "fusedstore"`, okCase), `"slots": 8`, `"slots": 8, "found": `+found, 1)
}

// bigFile marks a file made when a case needs it: a JSON string of the
// given size.
const bigFile = "\x00big:"

func fileContent(name string) []byte {
	c := badFiles[name]
	if n, ok := strings.CutPrefix(c, bigFile); ok {
		size, _ := strconv.Atoi(n)
		return []byte(`{"name": "` + strings.Repeat("x", size) + `"}`)
	}
	return []byte(c)
}

const okCase = `{"padding": "none", "valid": 1, "loc": [3], "rows": [{"kind": "normal", "seed": 1}]}`

// reproV2 is a valid version 2 repro file but for its record of the run,
// ran (JSON members).
func reproV2(ran string) string {
	return strings.Replace(reproWith(`"plugin": "fusedstore", `+ran, okCase), `"version": 1`, `"version": 2`, 1)
}

func reproWith(plugin, c string) string {
	return `{"version": 1, "kernel": "store", ` + plugin + `, "layout": {"name": "bf16", "head_dim": 16, "page_size": 4, "fields": [{"name": "v", "kind": "bf16", "to": 16}], "planes": [["v"]]}, "slots": 8, "background_seed": 1, "case": ` + c + `}`
}

// fixWords are the words a message that says what to do holds one of.
var fixWords = []string{"want", "did you mean", "give", "use ", "set ", "pass ", "remove", "rebuild", "run ", "as in",
	"flags are", "write --", "update kvharness", "is required", "lists the", "the right file", "re-pin", "correct the", "--plugin ", "fits"}

func TestBadInputs(t *testing.T) {
	if testing.Short() {
		t.Skip("starts plugins for the cases past the flags")
	}
	if len(badInputs) < 200 {
		t.Errorf("%d bad inputs; the suite promises at least 200", len(badInputs))
	}
	seen := map[string]bool{}
	pkgBefore := listDir(t, ".")
	t.Setenv("KVHARNESS_RUNTIME_DIR", t.TempDir())
	for i, bi := range badInputs {
		key := strings.Join(bi.args, "\x00")
		if seen[key] {
			t.Errorf("case %d repeats %q", i, bi.args)
		}
		seen[key] = true
		t.Run(fmt.Sprintf("%03d", i), func(t *testing.T) { checkBadInput(t, bi) })
	}
	if after := listDir(t, "."); !slicesEqual(pkgBefore, after) {
		t.Errorf("the package folder changed: before %v, after %v", pkgBefore, after)
	}
}

func checkBadInput(t *testing.T, bi badInput) {
	dir := t.TempDir()
	files := filepath.Join(dir, "files")
	os.Mkdir(files, 0o755)
	args := make([]string, len(bi.args))
	for i, a := range bi.args {
		if strings.HasPrefix(a, "$FILE/") {
			makeBadFile(t, files, strings.TrimPrefix(a, "$FILE/"))
			a = filepath.Join(files, strings.TrimPrefix(a, "$FILE/"))
		}
		args[i] = strings.ReplaceAll(a, "$DIR", dir)
	}
	if args[0] == "check" && !hasFlag(args, "--results") {
		args = slices.Insert(args, 1, "--results", filepath.Join(dir, "results"))
	}
	if args[0] == "bench" {
		args = slices.Insert(args, 1, "--out", filepath.Join(dir, "out"))
	}
	inputs := listDir(t, files)
	var stdout, stderr bytes.Buffer
	start := time.Now()
	code := run(context.Background(), &stdout, &stderr, args)
	msg := stderr.String()
	line := strings.TrimSuffix(msg, "\n")
	switch {
	case code != exitError:
		t.Errorf("%q: exit %d, want 2\nstderr: %s", bi.args, code, msg)
	case strings.Contains(line, "\n") || !strings.HasPrefix(line, "kvharness: "):
		t.Errorf("%q: want one line starting kvharness:, got %q", bi.args, msg)
	case strings.Contains(msg, "goroutine ") || strings.Contains(msg, "panic") || strings.Contains(msg, ".go:"):
		t.Errorf("%q: a stack trace: %s", bi.args, msg)
	case !strings.Contains(line, bi.want):
		t.Errorf("%q: message does not name the input (%q):\n%s", bi.args, bi.want, line)
	case !hasFix(line):
		t.Errorf("%q: message says nothing to do: %s", bi.args, line)
	case stdout.Len() > 0:
		t.Errorf("%q: wrote to stdout: %s", bi.args, stdout.String())
	}
	if left := listDir(t, dir); !slicesEqual(left, []string{"files"}) {
		t.Errorf("%q: left %v in its folder", bi.args, left)
	}
	if after := listDir(t, files); !slicesEqual(after, inputs) {
		t.Errorf("%q: input folder changed: %v, was %v", bi.args, after, inputs)
	}
	if kids := children(t); len(kids) > 0 {
		t.Errorf("%q: processes left running: %v", bi.args, kids)
	}
	t.Logf("%v in %v: %s", bi.args, time.Since(start).Round(time.Millisecond), line)
}

// makeBadFile makes the bad file a $FILE/ argument names in files: the
// file itself, or, for a path into a folder (shard-fifo/cells.jsonl given
// as shard-fifo), the files badFiles holds under it.
func makeBadFile(t *testing.T, files, arg string) {
	t.Helper()
	made := false
	for name := range badFiles {
		if name != arg && !strings.HasPrefix(name, strings.TrimSuffix(arg, "/")+"/") && !strings.HasPrefix(arg, name+"/") {
			continue
		}
		path := filepath.Join(files, name)
		os.MkdirAll(filepath.Dir(path), 0o755)
		if badFiles[name] == fifoFile {
			if err := syscall.Mkfifo(path, 0o600); err != nil && !os.IsExist(err) {
				t.Fatal(err)
			}
		} else {
			os.WriteFile(path, fileContent(name), 0o644)
		}
		made = true
	}
	if !made {
		t.Fatalf("no bad file %s", arg)
	}
}

func hasFlag(args []string, flag string) bool {
	for _, a := range args {
		if a == flag || strings.HasPrefix(a, flag+"=") {
			return true
		}
	}
	return false
}

func hasFix(line string) bool {
	for _, w := range fixWords {
		if strings.Contains(line, w) {
			return true
		}
	}
	return false
}

func listDir(t *testing.T, dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

func slicesEqual(a, b []string) bool { return strings.Join(a, "\x00") == strings.Join(b, "\x00") }

// children lists this process's live child processes (zombies aside).
func children(t *testing.T) []int {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", os.Getpid()))
	var out []int
	for _, f := range tasks {
		data, _ := os.ReadFile(f)
		for _, field := range strings.Fields(string(data)) {
			pid, _ := strconv.Atoi(field)
			if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && !bytes.Contains(stat, []byte(") Z ")) {
				out = append(out, pid)
			}
		}
	}
	return out
}
