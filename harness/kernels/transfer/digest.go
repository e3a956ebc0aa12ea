package transfer

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
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

// digester accumulates one room's pages of one buffer on both sides.
type digester struct {
	d        RoomDigest
	src, dst hash.Hash
}

func newDigest(room int, id uint64, buffer string, pages int) *digester {
	return &digester{d: RoomDigest{Room: room, RoomID: id, Buffer: buffer, Pages: pages}, src: sha256.New(), dst: sha256.New()}
}

func (g *digester) add(src, dst []byte) {
	g.src.Write(src)
	g.dst.Write(dst)
}

func (g *digester) done() RoomDigest {
	g.d.Src = hex.EncodeToString(g.src.Sum(nil)[:DigestSize])
	g.d.Dst = hex.EncodeToString(g.dst.Sum(nil)[:DigestSize])
	return g.d
}

// violation is the checksum violation of a room whose digests differ.
func (g *digester) violation() (Violation, bool) {
	d := g.d
	if d.Match() {
		return Violation{}, false
	}
	v := NewViolation(Checksum)
	v.Room, v.RoomID, v.Buffer = d.Room, d.RoomID, d.Buffer
	v.Want, _ = hex.DecodeString(d.Src)
	v.Got, _ = hex.DecodeString(d.Dst)
	v.Detail = fmt.Sprintf("a decode server verifying the room would reject it: the digest of its %d pages is %s on prefill, %s on decode",
		d.Pages, d.Src, d.Dst)
	return v, true
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
