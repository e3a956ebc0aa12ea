package remote

import (
	"encoding/binary"
	"hash/fnv"
)

// A request's first byte says what follows.
const (
	tagInput byte = iota // the input itself
	tagFile              // the path of a file holding the input (past doorbell.MaxRequest)
	tagHello             // nothing: answered once the checker is ready
)

// Answer codes.
const (
	codePass     uint32 = iota // the message is the case's features, two bytes each
	codeFail                   // the message is the crasher's
	codeFailFile               // the message is the path of a file holding the crasher's message
	codeSkip                   // the plugin lacks the kind: the target is skipped, for the message's reason
	codeError                  // the checker could not start: the message says why
)

// CheckerEnv names a kvharness binary to run as the checker instead of
// the one built from the source tree.
const CheckerEnv = "KVHARNESS_FUZZ_CHECKER"

// featureIDs hashes feature names into the ids the worker covers, at most
// max of them.
func featureIDs(names []string, max int) []byte {
	out := make([]byte, 0, 2*min(len(names), max))
	for _, n := range names[:min(len(names), max)] {
		h := fnv.New32a()
		h.Write([]byte(n))
		out = binary.LittleEndian.AppendUint16(out, uint16(h.Sum32()))
	}
	return out
}
