package remote

import (
	"encoding/binary"
	"errors"
	"testing"
)

// hits is what cover's blocks count; only the coverage counters of their
// code matter.
var hits [buckets]uint32

// Fuzz is the body of a kind's out-of-process FuzzX: the checker is
// started (a plugin without the kind skips the target), the kind's
// committed corpus (corpus: a folder of go test corpus files) is added to
// the seeds, and every input is checked there.
func Fuzz(f *testing.F, target, corpus string) {
	c, err := Start(target)
	var skip *SkipError
	if errors.As(err, &skip) {
		f.Skip(skip.Reason)
	}
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(c.Close)
	seeds, err := ReadCorpus(corpus)
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte{})
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		features, failure, err := c.Check(data)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+1 < len(features); i += 2 {
			cover(binary.LittleEndian.Uint16(features[i:]))
		}
		if failure != "" {
			t.Fatal(failure)
		}
	})
}

// SkipError is a checker's refusal of the target: the plugin lacks its
// kind.
type SkipError struct{ Reason string }

func (e *SkipError) Error() string { return e.Reason }
