package kernels_test

import (
	"slices"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/kvharness/kvharness/harness/kernels"
	"github.com/kvharness/kvharness/harness/protocol"
	_ "github.com/kvharness/kvharness/harness/protocol/kvpb" // registers the protocol's files
)

// TestKindsAreTheProtocolsServices: every kind in the table has a service
// of its own in the protocol, named as the kind is (protocol.KernelOf),
// and every kind service of the protocol has a kind here: a kind is one
// unit on both sides of the wire. A kind that drives other kinds' kernels
// (sequence: Uses) has no service; the kinds it uses do.
func TestKindsAreTheProtocolsServices(t *testing.T) {
	var services []protocol.Kernel
	protoregistry.GlobalFiles.RangeFilesByPackage("kvharness.v1", func(f protoreflect.FileDescriptor) bool {
		for i := range f.Services().Len() {
			if k, ok := protocol.KernelOf(string(f.Services().Get(i).FullName())); ok {
				services = append(services, k)
			}
		}
		return true
	})
	var names []protocol.Kernel
	for _, k := range kernels.All {
		names = append(names, k.Name)
		if len(k.Uses) > 0 {
			for _, u := range k.Uses {
				if !slices.Contains(services, u) {
					t.Errorf("kind %s uses %s, which has no service in the protocol (it has %v)", k.Name, u, services)
				}
			}
			if slices.Contains(services, k.Name) {
				t.Errorf("kind %s uses other kinds' kernels but has a service of its own", k.Name)
			}
			continue
		}
		if !slices.Contains(services, k.Name) {
			t.Errorf("kind %s has no service in the protocol (it has %v)", k.Name, services)
		}
	}
	for _, s := range services {
		if !slices.Contains(names, s) {
			t.Errorf("the protocol serves kind %s, which kernels.All lacks (%v)", s, names)
		}
	}
}
