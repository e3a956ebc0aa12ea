package plugin

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"github.com/kvharness/kvharness/harness/internal/inputfile"
)

// ErrChecksum is returned when a pinned plugin binary is not the file
// that was pinned.
var ErrChecksum = errors.New("plugin checksum mismatch")

// verifyFile checks a file against its pinned SHA-256, as go-plugin's
// SecureConfig does, before every start.
func verifyFile(path string, want []byte) error {
	got, err := FileSHA256(path)
	if err != nil {
		return err
	}
	if !bytes.Equal(got, want) {
		return fmt.Errorf("%w: %s has SHA-256 %s, pinned %s; rebuild or re-pin it (kvharness plugins --sha256 prints it)",
			ErrChecksum, path, hex.EncodeToString(got), hex.EncodeToString(want))
	}
	return nil
}

// FileSHA256 hashes a file.
func FileSHA256(path string) ([]byte, error) {
	f, err := inputfile.Open(path, "plugin file")
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
