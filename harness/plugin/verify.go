package plugin

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrChecksum is returned when a pinned plugin binary is not the file
// that was pinned.
var ErrChecksum = errors.New("plugin checksum mismatch")

// verify checks the binary against its pinned SHA-256, if any. It hashes
// the file itself, as go-plugin's SecureConfig does, before every start.
func (p *Plugin) verify() error {
	if len(p.opts.SHA256) == 0 {
		return nil
	}
	got, err := FileSHA256(p.Path)
	if err != nil {
		return err
	}
	if !bytes.Equal(got, p.opts.SHA256) {
		return fmt.Errorf("%w: %s has SHA-256 %s, pinned %s; rebuild or re-pin it (kvharness plugins --sha256 prints it)",
			ErrChecksum, p.Path, hex.EncodeToString(got), hex.EncodeToString(p.opts.SHA256))
	}
	return nil
}

// FileSHA256 hashes a file.
func FileSHA256(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("hash plugin: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, fmt.Errorf("hash plugin: %w", err)
	}
	return h.Sum(nil), nil
}
