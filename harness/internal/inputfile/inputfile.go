// Package inputfile reads the files a user hands the harness (layouts,
// repro files, manifests, matrices, benchmark results) one way: bounded,
// so that /dev/zero or a multi-gigabyte file given by mistake is an
// error and not a process that reads until it is killed; and, for JSON,
// strictly, so that a typo or a second object pasted after the first is
// an error and not a silently different input.
package inputfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// ErrTooLarge is wrapped by Read's error for a file over its limit.
var ErrTooLarge = errors.New("file too large")

// Read reads the file at path, refusing one of more than limit bytes
// without reading past limit+1 of it. what names the kind of file in the
// error ("layout file").
func Read(path, what string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s %s: %w; give the path of an existing file", what, path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return nil, fmt.Errorf("%s %s is a folder; give the path of a file", what, path)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s %s: %w", what, path, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s %s: %w: more than %d bytes, the most a %s holds; give the right file", what, path, ErrTooLarge, limit, what)
	}
	return data, nil
}

// DecodeJSON decodes exactly one JSON value from data into v: a field v
// does not have, or anything but white space after the value, is an
// error.
func DecodeJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return errors.New("empty: no JSON value")
		}
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("data after the first JSON value at byte %d: a file holds one value; remove the rest", dec.InputOffset())
	}
	return nil
}
