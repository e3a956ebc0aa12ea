package target

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// shut records the targets closed.
type shut struct {
	name   string
	closed *[]string
}

func (s shut) Close(context.Context) { *s.closed = append(*s.closed, s.name) }

func TestCacheKeepsTheLastFew(t *testing.T) {
	ctx := context.Background()
	var closed []string
	opened := 0
	c := Cache[shut]{Max: 2}
	get := func(key string) {
		t.Helper()
		if _, err := c.Get(ctx, key, func() (shut, error) { opened++; return shut{key, &closed}, nil }); err != nil {
			t.Fatal(err)
		}
	}
	get("a")
	get("b")
	get("a") // held: not opened again, and now the most recent
	get("c") // evicts b, the least recently used
	if opened != 3 || !slices.Equal(closed, []string{"b"}) {
		t.Fatalf("opened %d, closed %v; want 3 and [b]", opened, closed)
	}
	if _, err := c.Get(ctx, "d", func() (shut, error) { return shut{}, errors.New("no arena") }); err == nil {
		t.Fatal("an open that fails gave no error")
	}
	c.Close(ctx)
	if !slices.Equal(closed, []string{"b", "a", "c"}) {
		t.Errorf("closed %v, want [b a c]", closed)
	}
}
