package wire

import (
	"fmt"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// padPolicies pairs each declarable pad policy with its wire value.
var padPolicies = []struct {
	policy layout.PadPolicy
	wire   kvpb.PadPolicy
}{
	{layout.PadAny, kvpb.PadPolicy_PAD_POLICY_ANY},
	{layout.PadZero, kvpb.PadPolicy_PAD_POLICY_ZERO},
	{layout.PadKeep, kvpb.PadPolicy_PAD_POLICY_KEEP},
}

// PadPolicyToProto is a declared pad policy on the wire; "" is the
// layout's own.
func PadPolicyToProto(p layout.PadPolicy) kvpb.PadPolicy {
	for _, e := range padPolicies {
		if e.policy == p {
			return e.wire
		}
	}
	return kvpb.PadPolicy_PAD_POLICY_LAYOUT
}

// PadPolicyFromProto is a declared pad policy off the wire: "" for the
// layout's own (and for a value this harness does not know, which a
// newer plugin may send; the layout's policy then holds).
func PadPolicyFromProto(p kvpb.PadPolicy) layout.PadPolicy {
	for _, e := range padPolicies {
		if e.wire == p {
			return e.policy
		}
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
