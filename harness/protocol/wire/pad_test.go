package wire

import (
	"testing"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// TestPadPolicyRoundTrip: each declarable policy crosses the wire and
// back as itself, on distinct wire values; the layout's own ("") and a
// wire value this harness does not know both come back as "".
func TestPadPolicyRoundTrip(t *testing.T) {
	seen := map[kvpb.PadPolicy]bool{}
	for _, p := range []layout.PadPolicy{layout.PadAny, layout.PadZero, layout.PadKeep} {
		w := PadPolicyToProto(p)
		if w == kvpb.PadPolicy_PAD_POLICY_LAYOUT || seen[w] {
			t.Errorf("%q goes on the wire as %v, the layout's own or another policy's", p, w)
		}
		seen[w] = true
		if back := PadPolicyFromProto(w); back != p {
			t.Errorf("%q crosses as %v and comes back as %q", p, w, back)
		}
	}
	if w := PadPolicyToProto(""); w != kvpb.PadPolicy_PAD_POLICY_LAYOUT {
		t.Errorf("the layout's own policy goes as %v", w)
	}
	if back := PadPolicyFromProto(kvpb.PadPolicy(99)); back != "" {
		t.Errorf("an unknown wire value comes back as %q, want the layout's own", back)
	}
}
