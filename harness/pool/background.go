package pool

import "encoding/binary"

// Background returns the seeded background of bytes [off, off+n) of a
// filled window, off counted from the window's start. Each aligned 8-byte
// word is splitmix64 of (seed, word index), so any range can be computed
// on its own, on the host or in a GPU kernel.
func Background(seed uint64, off, n int) []byte {
	out := make([]byte, n)
	FillBackground(out, seed, off)
	return out
}

// FillBackground writes the background of window bytes [off, off+len(dst)).
func FillBackground(dst []byte, seed uint64, off int) {
	var w [8]byte
	i := 0
	for i < len(dst) {
		o := off + i
		word := uint64(o / 8)
		if o%8 == 0 && len(dst)-i >= 8 {
			binary.LittleEndian.PutUint64(dst[i:], BackgroundWord(seed, word))
			i += 8
			continue
		}
		binary.LittleEndian.PutUint64(w[:], BackgroundWord(seed, word))
		n := copy(dst[i:], w[o%8:])
		i += n
	}
}

// BackgroundWord is the background of word idx (bytes 8·idx..8·idx+7) of a
// filled window.
func BackgroundWord(seed, idx uint64) uint64 {
	z := seed + (idx+1)*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
