package remote

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ReadCorpus reads the inputs of a go test corpus folder (files of one
// []byte value each, as go test -fuzz writes them); a missing folder is
// an empty corpus.
func ReadCorpus(dir string) ([][]byte, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out [][]byte
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		path := filepath.Join(dir, e.Name())
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		in, err := parseEntry(data)
		if err != nil {
			return nil, fmt.Errorf("corpus file %s: %w; it must hold one []byte value as go test -fuzz writes it", path, err)
		}
		out = append(out, in)
	}
	return out, nil
}

// parseEntry reads a corpus file of one []byte value.
func parseEntry(data []byte) ([]byte, error) {
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 2 || lines[0] != "go test fuzz v1" {
		return nil, errors.New(`want "go test fuzz v1" and one value`)
	}
	lit, ok := strings.CutPrefix(lines[1], "[]byte(")
	if lit, ok = strings.CutSuffix(lit, ")"); !ok {
		return nil, fmt.Errorf("value %q is not a []byte(...)", lines[1])
	}
	s, err := strconv.Unquote(lit)
	if err != nil {
		return nil, fmt.Errorf("value %q: %w", lines[1], err)
	}
	return []byte(s), nil
}
