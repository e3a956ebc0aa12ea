package main

import (
	"context"

	"github.com/kvharness/kvharness/harness/benchrun"
)

const mergeExamples = `  kvharness bench --matrix bench/matrix-cpu.json --shard 1/3 --out shard-1   # and 2/3, 3/3, on three machines
  kvharness merge --out night shard-1 shard-2 shard-3
  kvharness compare bench/baselines/cpu.txt night/bench.txt
`

func runMerge(_ context.Context, e *env, args []string) int {
	fs := flags("merge", "--out DIR SHARD_DIR...", mergeExamples, e)
	out := fs.String("out", "kvharness-bench", "output folder of the joined night: cells.jsonl, bench.txt, table.txt, night.json, plots/")
	format := fs.String("format", "text", "the table on stdout: text, md, csv or json")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	f, err := benchrun.ParseFormat(*format)
	if err != nil {
		return e.errorf("%v", err)
	}
	if fs.NArg() == 0 {
		return e.errorf("merge takes the shards' --out folders; got none: give them after the flags, as in kvharness merge --out night shard-1 shard-2")
	}
	if in := overwrites(*out, benchrun.OutputFiles, fs.Args()...); in != "" {
		return e.errorf("merge: --out %s would write over shard %s, which it reads; give another --out, as in --out night", *out, in)
	}
	if err := benchrun.CheckOut(*out); err != nil {
		return e.errorf("%v", err)
	}
	cells, man, err := benchrun.Merge(fs.Args())
	if err != nil {
		return e.errorf("merge: %v", err)
	}
	o, err := benchrun.OpenOut(*out)
	if err != nil {
		return e.errorf("%v", err)
	}
	defer o.Close()
	return writeNight(e, *out, f, cells, man)
}
