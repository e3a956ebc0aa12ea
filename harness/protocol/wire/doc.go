// Package wire converts between the protocol's messages (kvpb) and the Go
// types the harness and the SDKs share, where a conversion is the same on
// both sides of the wire: a kernel's declared fp8 recipe and non-finite
// policy.
package wire
