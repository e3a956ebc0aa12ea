// Package plugin starts kernel plugins and calls them, and decides whose
// fault a failure is.
//
// Each plugin runs in its own process group, started through go-plugin's
// gRPC protocol with a runner of ours that knows the process's exit status
// the moment it dies (go-plugin alone learns it only after the plugin's
// pipes close, which a leaked child can delay forever). Every call carries
// a deadline. A failed call becomes a *Fault of one kind — crash, hang,
// handshake, protocol or error — carrying the call, the exit status or
// signal, and the tail of the plugin's stderr: a plugin that panics is a
// reported plugin fault, never a harness crash and never an invariant
// violation.
package plugin
