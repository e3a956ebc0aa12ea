package store

import (
	"testing"
	"time"

	"google.golang.org/grpc/metadata"

	"github.com/kvharness/kvharness/harness/protocol"
)

// TestHandlerTime: the trailer is optional and untrusted; anything but one
// non-negative integer reads as "not said".
func TestHandlerTime(t *testing.T) {
	for _, tc := range []struct {
		md   metadata.MD
		want time.Duration
	}{
		{metadata.Pairs(protocol.HandlerTimeKey, "1500"), 1500},
		{nil, 0},
		{metadata.Pairs(protocol.HandlerTimeKey, "-3"), 0},
		{metadata.Pairs(protocol.HandlerTimeKey, "soon"), 0},
		{metadata.Pairs(protocol.HandlerTimeKey, "1", protocol.HandlerTimeKey, "2"), 0},
	} {
		if got := handlerTime(tc.md); got != tc.want {
			t.Errorf("handlerTime(%v) = %v; want %v", tc.md, got, tc.want)
		}
	}
}
