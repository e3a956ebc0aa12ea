package sequence

import (
	"encoding/binary"
	"hash/maphash"
)

// A token's row is a function of its key and layer alone, so the oracle
// needs no copy of what was staged, and bytes found in the wrong slot can
// be named: whose token they are.

func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// rowBytes writes the bf16 row of key k in layer into dst (2 bytes per
// element): finite, nonzero values of magnitude 2^-7..2^8, never equal to
// another key's first element pair by design of the hash (a collision is
// possible but only renames a finding, never hides one).
//
// salt is the case's: each check of a target draws its rows anew, so a
// write a plugin left pending from an earlier case never matches a row of
// this one by chance of history.
func rowBytes(dst []byte, salt uint64, layer int, k rowKey) {
	s := mix(salt ^ mix(uint64(layer)<<56^uint64(k.Req)<<28^uint64(k.Pos)))
	for i := 0; i+1 < len(dst); i += 2 {
		if i%8 == 0 {
			s = mix(s)
		}
		r := uint16(s >> (16 * (i % 8 / 2)))
		// sign, an exponent in 120..135, seven mantissa bits
		v := r&0x807f | uint16(120+(r>>7)%16)<<7
		binary.LittleEndian.PutUint16(dst[i:], v)
	}
}

// fingerprint is what identifies a row's bytes: their hash.
func fingerprint(b []byte) uint64 { return maphash.Bytes(seed, b) }

// seed is the process's hash seed: digests are compared within a process.
var seed = maphash.MakeSeed()
