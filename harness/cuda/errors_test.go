package cuda

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestResultNames(t *testing.T) {
	cases := map[Result]string{
		0:     "CUDA_SUCCESS",
		2:     "CUDA_ERROR_OUT_OF_MEMORY",
		700:   "CUDA_ERROR_ILLEGAL_ADDRESS",
		901:   "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
		12345: "CUDA_ERROR_12345",
	}
	for r, want := range cases {
		if got := r.Name(); got != want {
			t.Errorf("Result(%d).Name() = %q; want %q", r, got, want)
		}
		if got := r.String(); got != want {
			t.Errorf("Result(%d).String() = %q; want %q", r, got, want)
		}
	}
}

func TestCheck(t *testing.T) {
	if err := check("cuMemAlloc", 0); err != nil {
		t.Fatalf("check of CUDA_SUCCESS = %v; want nil", err)
	}
	wrapped := fmt.Errorf("allocate: %w", check("cuMemAlloc", 2))
	var ce *Error
	if !errors.As(wrapped, &ce) {
		t.Fatalf("errors.As(%v, *Error) failed", wrapped)
	}
	if ce.Op != "cuMemAlloc" || ce.Code != 2 {
		t.Errorf("Error = {%q, %d}; want {cuMemAlloc, 2}", ce.Op, ce.Code)
	}
	msg := wrapped.Error()
	for _, want := range []string{"cuMemAlloc", "CUDA_ERROR_OUT_OF_MEMORY", "CUresult 2", "smaller arena"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
}

// TestResultTableMatchesHints keeps every hint attached to a named code.
func TestResultTableMatchesHints(t *testing.T) {
	for code := range hints {
		if _, ok := resultNames[code]; !ok {
			t.Errorf("hint for code %d, which has no name in resultNames", code)
		}
	}
}
