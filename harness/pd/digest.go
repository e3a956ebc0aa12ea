package pd

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"
)

// RoomDigest is a room's checksum of one buffer on both sides, the way a
// decode server verifies a room before using it (sglang #39229): SHA-256
// over the room's pages in room order, truncated to 8 bytes. It depends on
// the bytes and their order in the room only, not on the page numbers, so
// prefill and decode compute the same digest for a correct transfer
// wherever the pages live: it is relocation-invariant.
type RoomDigest struct {
	Room   int    `json:"room"`
	RoomID uint64 `json:"room_id"`
	Buffer string `json:"buffer"`
	Pages  int    `json:"pages"`
	Src    string `json:"src"` // hex, computed from the prefill pages
	Dst    string `json:"dst"` // hex, computed from the decode pages after the run
}

// Match reports whether decode received what prefill sent.
func (d RoomDigest) Match() bool { return d.Src == d.Dst }

// DigestSize is the bytes of SHA-256 a RoomDigest keeps.
const DigestSize = 8

// Digest is SHA-256 of pages in order, truncated to DigestSize bytes: what
// one side of a RoomDigest holds (hex-encoded there).
func Digest(pages ...[]byte) []byte {
	h := sha256.New()
	for _, p := range pages {
		h.Write(p)
	}
	return h.Sum(nil)[:DigestSize]
}

// Digester accumulates one room's pages of one buffer on both sides.
type Digester struct {
	d        RoomDigest
	src, dst hash.Hash
}

// NewDigester starts the digests of room (index room, id id) in a buffer
// of the given number of pages.
func NewDigester(room int, id uint64, buffer string, pages int) *Digester {
	return &Digester{d: RoomDigest{Room: room, RoomID: id, Buffer: buffer, Pages: pages}, src: sha256.New(), dst: sha256.New()}
}

// Add adds the next page of the room: its prefill and decode bytes.
func (g *Digester) Add(src, dst []byte) {
	g.src.Write(src)
	g.dst.Write(dst)
}

// Done returns the digests of the pages added.
func (g *Digester) Done() RoomDigest {
	g.d.Src = hex.EncodeToString(g.src.Sum(nil)[:DigestSize])
	g.d.Dst = hex.EncodeToString(g.dst.Sum(nil)[:DigestSize])
	return g.d
}

// DigestsMatch reports whether every digest matches.
func DigestsMatch(ds []RoomDigest) bool {
	for _, d := range ds {
		if !d.Match() {
			return false
		}
	}
	return true
}
