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
	"strings"

	"golang.org/x/sys/unix"
)

// ErrTooLarge is wrapped by Read's error for a file over its limit.
var ErrTooLarge = errors.New("file too large")

// Open opens the file at path for reading the way every input is opened:
// without blocking, so that a FIFO or a device that would wait for a
// writer is refused instead of waited on forever, and only when it is a
// regular file. what names the kind of file in the error ("layout file").
func Open(path, what string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil, fmt.Errorf("%s %s: %w; give the path of an existing file", what, path, fs.ErrNotExist)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s %s: %w", what, path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	st, err := f.Stat()
	switch {
	case err != nil:
		f.Close()
		return nil, fmt.Errorf("read %s %s: %w", what, path, err)
	case st.IsDir():
		f.Close()
		return nil, fmt.Errorf("%s %s is not a regular file (a folder); give the path of a file", what, path)
	case !st.Mode().IsRegular():
		f.Close()
		return nil, fmt.Errorf("%s %s is not a regular file (%s); give the path of a file", what, path, kindOf(st.Mode()))
	}
	if err := unix.SetNonblock(fd, false); err != nil { // a regular file never blocks; plain reads from here
		f.Close()
		return nil, fmt.Errorf("read %s %s: %w", what, path, err)
	}
	return f, nil
}

// kindOf names a file mode's type in words.
func kindOf(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "type " + m.Type().String()
}

// Read reads the file at path (opened as Open opens it), refusing one of
// more than limit bytes without reading past limit+1 of it. what names
// the kind of file in the error ("layout file").
func Read(path, what string, limit int64) ([]byte, error) {
	f, err := Open(path, what)
	if err != nil {
		return nil, err
	}
	defer f.Close()
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
// does not have, a key given twice in one object, or anything but white
// space after the value, is an error.
func DecodeJSON(data []byte, v any) error {
	if err := UniqueKeys(data); err != nil {
		return err
	}
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

// UniqueKeys walks data's tokens and refuses a key that appears twice in
// one object: encoding/json keeps the last silently, so a file edited by
// hand (or by someone else) could say one thing to a reader and another
// to kvharness. Syntax errors are left to the decoder. DecodeJSON checks
// it; a reader that lets unknown fields through calls it itself.
func UniqueKeys(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	type frame struct {
		keys   map[string]bool
		object bool
		name   string // the key this value is under, for messages
		expect bool   // in an object: the next token is a key
	}
	var stack []*frame
	path := func(key string) string {
		var parts []string
		for _, f := range stack {
			if f.name != "" {
				parts = append(parts, f.name)
			}
		}
		return strings.Join(append(parts, key), ".")
	}
	pending := "" // the key of the value about to start
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil // io.EOF, or a syntax error DecodeJSON reports itself
		}
		top := (*frame)(nil)
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.expect {
			if key, ok := tok.(string); ok {
				if top.keys[key] {
					return fmt.Errorf("duplicate key %q at byte %d: a key appears once in an object; remove one of them", path(key), dec.InputOffset())
				}
				top.keys[key] = true
				top.expect, pending = false, key
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{keys: map[string]bool{}, object: true, name: pending, expect: true})
		case json.Delim('['):
			stack = append(stack, &frame{name: pending})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		pending = ""
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].expect = true
		}
	}
}
