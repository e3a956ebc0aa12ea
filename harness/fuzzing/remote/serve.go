package remote

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kvharness/kvharness/harness/protocol/doorbell"
)

// Verdicter checks fuzz inputs of one target: kind.FuzzChecker.
type Verdicter interface {
	Verdict(ctx context.Context, data []byte) (features []string, failure string)
	Close()
}

// maxFeatures is how many features an answer carries.
const maxFeatures = doorbell.MaxMessage / 2

// Serve is the checker's side: it answers the worker's requests on the
// doorbell in the memfd at fd until the worker stops it or goes away. open
// opens the target at the worker's hello; an error of type *SkipError
// skips the target, any other fails it. Messages past the doorbell's
// size go through files in spill.
func Serve(ctx context.Context, fd int, spill string, open func(context.Context) (Verdicter, error)) error {
	mem, err := unix.Mmap(fd, 0, doorbell.Size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("fuzz-check: map the doorbell at fd %d (the fuzz worker passes it; run this only from go test -fuzz): %w", fd, err)
	}
	defer unix.Munmap(mem)
	box, err := doorbell.Open(mem)
	if err != nil {
		return err
	}
	s := &server{spill: spill, open: open}
	defer s.close()
	go watchParent(box)
	box.Serve(0, func(req []byte) (uint32, string) { return s.handle(ctx, req) })
	return nil
}

// watchParent stops the doorbell when the process that started this one
// is gone (a fuzz worker killed by go test), so that the checker closes
// its plugin and exits.
func watchParent(box *doorbell.Box) {
	parent := os.Getppid()
	for os.Getppid() == parent {
		time.Sleep(500 * time.Millisecond)
	}
	box.Stop()
}

// server is the state of one Serve.
type server struct {
	spill string
	open  func(context.Context) (Verdicter, error)
	v     Verdicter
}

func (s *server) close() {
	if s.v != nil {
		s.v.Close()
	}
}

// handle answers one request.
func (s *server) handle(ctx context.Context, req []byte) (uint32, string) {
	if len(req) == 0 {
		return codeError, "an empty request"
	}
	switch req[0] {
	case tagHello:
		if s.v != nil {
			return codePass, ""
		}
		v, err := s.open(ctx)
		var skip *SkipError
		if errors.As(err, &skip) {
			return codeSkip, skip.Reason
		}
		if err != nil {
			return codeError, err.Error()
		}
		s.v = v
		return codePass, ""
	case tagInput, tagFile:
		if s.v == nil {
			return codeError, "an input before the hello"
		}
		data := req[1:]
		if req[0] == tagFile {
			var err error
			if data, err = os.ReadFile(string(req[1:])); err != nil {
				return codeError, err.Error()
			}
		}
		features, failure := s.v.Verdict(ctx, data)
		if failure == "" {
			return codePass, string(featureIDs(features, maxFeatures))
		}
		return s.fail(failure)
	}
	return codeError, fmt.Sprintf("request tag %d", req[0])
}

// fail answers a failure, through a file when it is too long for the
// doorbell: one file, overwritten by the next, as the worker reads it
// before it posts again.
func (s *server) fail(msg string) (uint32, string) {
	if len(msg) <= doorbell.MaxMessage {
		return codeFail, msg
	}
	path := filepath.Join(s.spill, "failure")
	if err := os.WriteFile(path, []byte(msg), 0o600); err != nil {
		return codeFail, msg[:doorbell.MaxMessage]
	}
	return codeFailFile, path
}
