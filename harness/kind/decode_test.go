package kind

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/workload"
)

func TestDecodeReproTakesOnlyItsKernel(t *testing.T) {
	called := 0
	k := Kind{Name: "store", Decode: func(json.RawMessage, int) (workload.Case, error) { called++; return nil, nil }}
	if _, err := k.DecodeRepro("read", []byte(`{}`), 64); err == nil || !strings.Contains(err.Error(), "read") || called != 0 {
		t.Errorf("a read case: err %v, decoder called %d times; want an error naming read, no call", err, called)
	}
	if _, err := k.DecodeRepro("store", []byte(`{}`), 64); err != nil || called != 1 {
		t.Errorf("a store case: err %v, decoder called %d times; want its decoder, once", err, called)
	}
}
