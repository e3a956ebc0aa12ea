package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/kvharness/kvharness/harness/telemetry"
)

const gpuExamples = `  kvharness gpu
  kvharness gpu --json
`

func runGPU(_ context.Context, e *env, args []string) int {
	fs := flags("gpu", "[--json]", gpuExamples, e)
	asJSON := fs.Bool("json", false, "print JSON")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if err := noArgs(fs); err != nil {
		return e.errorf("%v", err)
	}
	snap, err := telemetry.Collect(telemetry.NewLibrary())
	if errors.Is(err, telemetry.ErrUnavailable) { // not an error: a CPU machine is a valid place to run
		if *asJSON {
			writeJSON(e, struct {
				Devices     []any  `json:"devices"`
				Unavailable string `json:"unavailable"`
			}{Devices: []any{}, Unavailable: err.Error()})
			return exitPass
		}
		fmt.Fprintf(e.stdout, "no GPU: %v\n", err)
		return exitPass
	}
	if err != nil {
		return e.errorf("%v", err)
	}
	if *asJSON {
		writeJSON(e, snap)
		return exitPass
	}
	if err := snap.WriteText(e.stdout); err != nil {
		return e.errorf("%v", err)
	}
	return exitPass
}

// writeJSON prints v as indented JSON on stdout.
func writeJSON(e *env, v any) {
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}
