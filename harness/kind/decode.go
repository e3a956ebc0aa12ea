package kind

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/kvharness/kvharness/harness/protocol"
	"github.com/kvharness/kvharness/harness/workload"
)

// DecodeRepro is a report.CaseDecoder for this kind's repro files alone: a
// file of another kernel is an error naming it, where the registry's
// decoder (kernels.Decode) would read it.
func (k Kind) DecodeRepro(kernel protocol.Kernel, data []byte, slots int) (workload.Case, error) {
	if kernel != k.Name {
		return nil, fmt.Errorf("kernel %s: want a %s case", kernel, k.Name)
	}
	return k.Decode(data, slots)
}

// DecodeCase reads the JSON of a kind's case strictly into c (a pointer to
// a zero case) and validates it against a pool of slots; errors name the
// kernel, as a repro file's reader wants them.
func DecodeCase[C interface{ Validate(slots int) error }](kernel protocol.Kernel, data []byte, slots int, c C) (C, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(c); err != nil {
		return c, fmt.Errorf("%s case: %w", kernel, err)
	}
	if err := c.Validate(slots); err != nil {
		return c, fmt.Errorf("case: %w", err)
	}
	return c, nil
}
