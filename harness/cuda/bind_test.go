package cuda

import (
	"strings"
	"testing"

	"github.com/ebitengine/purego"
)

// TestBindMissingSymbol binds against libc: a present symbol works, a
// missing one is reported by name instead of panicking in purego.
func TestBindMissingSymbol(t *testing.T) {
	lib, err := purego.Dlopen("libc.so.6", purego.RTLD_NOW)
	if err != nil {
		t.Skipf("no libc.so.6 to bind against: %v", err)
	}
	var strlen func(s string) uint64
	var nope func() int32
	err = bind(lib, "libc.so.6", []symbol{{"strlen", &strlen}, {"cuKvharnessNoSuchSymbol", &nope}})
	if err == nil || !strings.Contains(err.Error(), "cuKvharnessNoSuchSymbol") || strings.Contains(err.Error(), "strlen") {
		t.Fatalf("bind error = %v; want one naming only the missing symbol", err)
	}
	if strlen == nil || strlen("kvharness") != 9 {
		t.Error("the present symbol was not bound")
	}
}

func TestGoString(t *testing.T) {
	b := []byte("sm_90\x00junk")
	if got := goString(&b[0]); got != "sm_90" {
		t.Errorf("goString = %q", got)
	}
	if goString(nil) != "" {
		t.Error("goString(nil) is not empty")
	}
}

// TestSymbolsOf binds a tagged struct against libc: tagged fields are bound
// under their tag's name, untagged ones are left alone.
func TestSymbolsOf(t *testing.T) {
	lib, err := purego.Dlopen("libc.so.6", purego.RTLD_NOW)
	if err != nil {
		t.Skipf("no libc.so.6 to bind against: %v", err)
	}
	var api struct {
		length   func(s string) uint64 `sym:"strlen"`
		untagged func() int32
	}
	syms := symbolsOf(&api)
	if len(syms) != 1 || syms[0].name != "strlen" {
		t.Fatalf("symbolsOf = %v; want only strlen", syms)
	}
	if err := bind(lib, "libc.so.6", syms); err != nil {
		t.Fatal(err)
	}
	if api.length == nil || api.length("kvharness") != 9 {
		t.Error("the tagged field was not bound")
	}
	if api.untagged != nil {
		t.Error("the untagged field was bound")
	}
}
