package sequence

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
)

// A trace is a sequence recorded from an engine (kvharness_sdk.trace in
// the Python SDK writes them): JSON lines, the first a header with the
// engine's geometry, then one step per line as the engine's scheduler took
// it. Steps may carry what the engine did beside what the harness needs
// (the captured capacity it replayed, the slots and pages it used): the
// harness checks the capacity against its geometry's and keeps the rest as
// the engine's record. Unknown keys are errors, as in every file
// kvharness reads.

// TraceVersion is the header's kvharness_trace.
const TraceVersion = 1

// TraceHeader is a trace's first line.
type TraceHeader struct {
	Version  int      `json:"kvharness_trace"`
	Engine   string   `json:"engine,omitempty"`
	Geometry Geometry `json:"geometry"`
}

// TraceStep is one recorded step.
type TraceStep struct {
	Step
	Capacity int     `json:"capacity,omitempty"` // decode: the graph the engine replayed
	Slots    []int64 `json:"slots,omitempty"`    // the slots the engine stored into
	Pages    []int   `json:"pages,omitempty"`    // the engine's page table after the step
}

// ReadTrace reads a trace file into the sequence it recorded.
func ReadTrace(path string) (*Case, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--trace: %w", err)
	}
	c, err := ParseTrace(data)
	if err != nil {
		return nil, fmt.Errorf("--trace %s: %w", path, err)
	}
	return c, nil
}

// ParseTrace reads a trace's bytes.
func ParseTrace(data []byte) (*Case, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	var c *Case
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if c == nil {
			var h TraceHeader
			if err := dec.Decode(&h); err != nil {
				return nil, fmt.Errorf("line %d: the header: %w (want {\"kvharness_trace\": 1, \"geometry\": {...}})", line, err)
			}
			if h.Version != TraceVersion {
				return nil, fmt.Errorf("line %d: kvharness_trace %d: this kvharness reads version %d", line, h.Version, TraceVersion)
			}
			if err := h.Geometry.Validate(); err != nil {
				return nil, fmt.Errorf("line %d: geometry: %w", line, err)
			}
			c = &Case{Geometry: h.Geometry}
			continue
		}
		var s TraceStep
		if err := dec.Decode(&s); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		if s.Op == OpDecode && s.Capacity != 0 && s.Capacity != c.Geometry.capacityFor(len(s.Batch)) {
			return nil, fmt.Errorf("line %d: a batch of %d replayed at capacity %d; the geometry's capacities %v give %d",
				line, len(s.Batch), s.Capacity, c.Geometry.Capacities, c.Geometry.capacityFor(len(s.Batch)))
		}
		c.Steps = append(c.Steps, s.Step)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if c == nil {
		return nil, fmt.Errorf("empty: want a header line and steps")
	}
	if err := c.Validate(0); err != nil {
		return nil, err
	}
	return c, nil
}
