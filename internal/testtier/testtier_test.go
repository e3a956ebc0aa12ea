package testtier

import "testing"

// The full suite is on for any value but empty and "0", and never under
// -short.
func TestFull(t *testing.T) {
	for v, want := range map[string]bool{"": false, "0": false, "1": true, "yes": true} {
		t.Setenv(FullEnv, v)
		if got := Full(); got != (want && !testing.Short()) {
			t.Errorf("%s=%q: Full() = %v, want %v", FullEnv, v, got, want && !testing.Short())
		}
	}
}

// SkipShort skips exactly under -short.
func TestSkipShort(t *testing.T) {
	ran := false
	t.Run("sub", func(t *testing.T) {
		SkipShort(t, "a test")
		ran = true
	})
	if ran == testing.Short() {
		t.Errorf("under -short=%v the test ran = %v", testing.Short(), ran)
	}
}

func TestPick(t *testing.T) {
	want := 2
	switch {
	case Full():
		want = 3
	case testing.Short():
		want = 1
	}
	if got := Pick(1, 2, 3); got != want {
		t.Errorf("Pick(1, 2, 3) = %d in this tier; want %d", got, want)
	}
}
