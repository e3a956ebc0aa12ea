package pdasync

import (
	"fmt"
	"strings"

	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/pd"
)

// oracle.Violation kinds of an asynchronous transfer. Causes come before
// symptoms, so that a shrunk counterexample keeps the root cause:
//
//	pagemap     the decode sent prefill pages other than the room's
//	            physical pages (virtual indices sent as physical after
//	            compaction: sglang PR #31471)
//	descriptor  a handle's descriptors are malformed (length, item_len,
//	            alignment, bounds) or do not send exactly the handle's page
//	            pairs, as the decode sent them
//	completion  the prefill raised a notification that was not true: a
//	            handle done whose gate the harness still holds (a poll
//	            taken as completion: ai-dynamo/nixl #182), done though the
//	            harness failed it, a component done before its handles
//	early-read  the decode read a room before every handle and component of
//	            it completed and was notified, or read an aborted or failed
//	            room (sglang #39846: done after the first of several
//	            components)
//	reuse       the decode gave a room's pages back while a copy into them
//	            could still land: a handle still behind its gate writes them
//	            (after an abort: sglang #24527; after the first failed
//	            handle: vllm PR #56104)
//	outside     bytes landed where no released copy writes, on a page its
//	            room does not own, before their gate opened, or on the
//	            prefill side
//	stale       a copy landed on a page after it came back and was
//	            reassigned: the page's epochs name the writer
//	bytes       a room the decode read differs from its source, byte for
//	            byte (digest: what the decode read differs from the source)
//	liveness    a handle released never ended, or a room was never read nor
//	            freed though every gate was opened and every notification
//	            delivered
//	protocol    an answer that makes no sense: an event for a room not
//	            admitted or already over, an admit answer of the wrong
//	            length, a handle posted twice or never
const (
	PageMap       oracle.Kind = "pagemap"
	BadDescriptor oracle.Kind = "descriptor"
	Completion    oracle.Kind = "completion"
	EarlyRead     oracle.Kind = "early-read"
	Reuse         oracle.Kind = "reuse"
	Outside       oracle.Kind = "outside"
	Stale         oracle.Kind = "stale"
	Bytes         oracle.Kind = "bytes"
	Digest        oracle.Kind = "digest"
	Liveness      oracle.Kind = "liveness"
	Protocol      oracle.Kind = "protocol"
)

// Kinds lists the violation kinds in report order: the plugin's declared
// geometry, then causes before symptoms.
var Kinds = []oracle.Kind{oracle.Geometry, PageMap, BadDescriptor, Completion, EarlyRead, Reuse, Outside, Stale, Bytes, Digest,
	Liveness, Protocol}

// Violation is one violation with what locates it in the run: when it was
// seen, the room, handle and buffer, the decode page (the room's physical
// page and the buffer's) and its epoch. Fields that do not apply are -1
// (or empty).
type Violation struct {
	Kind    oracle.Kind `json:"kind"`
	At      string      `json:"at"` // "setup", "step 3 (abort r1)", "drain"
	Room    int         `json:"room"`
	RoomID  uint64      `json:"room_id"`
	Handle  string      `json:"handle,omitempty"` // hR.C.K
	Buffer  string      `json:"buffer,omitempty"`
	Page    int64       `json:"page"`     // the room's physical decode page
	DstPage int64       `json:"dst_page"` // that page in the buffer's pool (its page table applied)
	Epoch   int         `json:"epoch,omitempty"`
	Off     int         `json:"offset"` // from the base of the pool the bytes lie in
	Len     int         `json:"len"`
	Want    []byte      `json:"want,omitempty"` // at most oracle.MaxShown bytes from Off
	Got     []byte      `json:"got,omitempty"`
	Detail  string      `json:"detail"`
}

// newViolation returns a violation of kind k located nowhere yet.
func newViolation(k oracle.Kind, at string) Violation {
	return Violation{Kind: k, At: at, Room: -1, Page: -1, DstPage: -1}
}

// Where names what the violation is about, e.g. "room 0 (id 7) handle
// h0.1.0 buffer L0.kv page 5 (dst page 11, epoch 3)".
func (v Violation) Where() string {
	parts := pd.WhereRoom(v.Room, v.RoomID)
	if v.Handle != "" {
		parts = append(parts, "handle "+v.Handle)
	}
	if v.Buffer != "" {
		parts = append(parts, "buffer "+v.Buffer)
	}
	if v.Page >= 0 {
		p := fmt.Sprintf("page %d", v.Page)
		if v.DstPage >= 0 && v.DstPage != v.Page {
			p += fmt.Sprintf(" (dst page %d)", v.DstPage)
		}
		if v.Epoch > 0 {
			p += fmt.Sprintf(" epoch %d", v.Epoch)
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, " ")
}

func (v Violation) String() string {
	s := fmt.Sprintf("%s at %s", v.Kind, v.At)
	if w := v.Where(); w != "" {
		s += ": " + w
	}
	return pd.ViolationLine(s, v.Off, v.Len, v.Detail)
}

// KindOf implements oracle.Typed.
func (v Violation) KindOf() oracle.Kind { return v.Kind }

// Generic is the violation in the form every kind's repro files hold.
func (v Violation) Generic() oracle.Violation {
	page := v.DstPage
	if page < 0 {
		page = v.Page
	}
	detail := "at " + v.At + ": " + v.Detail
	if w := v.Where(); w != "" {
		detail = "at " + v.At + ": " + w + ": " + v.Detail
	}
	return oracle.Violation{Kind: v.Kind, Row: oracle.NoRow, Page: page, Field: v.Buffer, Off: v.Off, Len: v.Len,
		Want: v.Want, Got: v.Got, Detail: detail}
}

// maxPerKind bounds the violations kept of one kind: a room read too
// early shows on every page, and the first ones say it all.
const maxPerKind = 16

// finish orders violations by kind (stable: in the order seen) and keeps
// the first maxPerKind of each.
func finish(vs []Violation) []Violation {
	return oracle.KeepPerKind(vs, Kinds, maxPerKind, func(v *Violation, more string) { v.Detail += more })
}
