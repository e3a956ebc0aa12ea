package wire

import (
	"fmt"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// PadPolicyToProto is a declared pad policy on the wire; "" is the
// layout's own.
func PadPolicyToProto(p layout.PadPolicy) kvpb.PadPolicy {
	switch p {
	case layout.PadAny:
		return kvpb.PadPolicy_PAD_POLICY_ANY
	case layout.PadZero:
		return kvpb.PadPolicy_PAD_POLICY_ZERO
	case layout.PadKeep:
		return kvpb.PadPolicy_PAD_POLICY_KEEP
	}
	return kvpb.PadPolicy_PAD_POLICY_LAYOUT
}

// PadPolicyFromProto is a declared pad policy off the wire: "" for the
// layout's own (and for a value this harness does not know, which a
// newer plugin may send; the layout's policy then holds).
func PadPolicyFromProto(p kvpb.PadPolicy) layout.PadPolicy {
	switch p {
	case kvpb.PadPolicy_PAD_POLICY_ANY:
		return layout.PadAny
	case kvpb.PadPolicy_PAD_POLICY_ZERO:
		return layout.PadZero
	case kvpb.PadPolicy_PAD_POLICY_KEEP:
		return layout.PadKeep
	}
	return ""
}

// CheckPadPolicy refuses a pad policy the wire cannot carry: a plugin
// author sees the one-line error on the first Describe.
func CheckPadPolicy(p layout.PadPolicy) error {
	switch p {
	case "", layout.PadAny, layout.PadZero, layout.PadKeep:
		return nil
	}
	return fmt.Errorf("pad policy %q: want %q, %q or %q (or none: the layout's)", p, layout.PadAny, layout.PadZero, layout.PadKeep)
}
