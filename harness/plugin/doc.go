// Package plugin starts kernel plugins and calls them, and decides whose
// fault a failure is.
//
// Each plugin runs in its own process group, started through go-plugin's
// gRPC protocol with a runner of ours that knows the process's exit status
// the moment it dies (go-plugin alone learns it only after the plugin's
// pipes close, which a leaked child can delay forever). Every call carries
// a deadline. A failed call becomes a *Fault of one kind — crash, hang,
// handshake, protocol or error — carrying the call, the exit status or
// signal, the tail of the plugin's stderr and, when it crashed, the start
// of its crash report (a Go panic's message and the plugin's own frames,
// a Python traceback), which the tail alone would have lost to the gRPC
// frames that end it. A plugin that panics is never a harness crash;
// whether its crash is the kernel's bug (it died running a case:
// Fault.InKernel) or the plugin's is the caller's to say.
//
// Close asks a plugin to exit (go-plugin's controller) and kills its
// process group only after a grace period, so that a compute-sanitizer
// wrapped around it (Options.Sanitizer) writes its records and summary.
// The sanitizer's text goes to a log file per process, never to the
// plugin's stdout, where go-plugin reads the handshake; its records are
// read as they are written (SanitizerFindings) and, for a process that
// has exited, kept until the case it crashed on claims them
// (ExitedFindings) or the run lists them (Sanitizer.Orphans).
package plugin
