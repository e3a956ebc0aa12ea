package transfer

import (
	"fmt"
	"strings"

	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/pd"
)

// Violation is one transfer violation with everything that locates
// it: the room, the buffer, the room's page and its physical pages on both
// sides, and the descriptor at fault. Fields that do not apply are -1 (or
// empty).
type Violation struct {
	Kind       oracle.Kind    `json:"kind"`
	Room       int            `json:"room"` // index in the case
	RoomID     uint64         `json:"room_id"`
	Buffer     string         `json:"buffer,omitempty"`
	Page       int            `json:"page"`       // index into the room's page lists
	SrcPage    int64          `json:"src_page"`   // physical page of the buffer's prefill pool
	DstPage    int64          `json:"dst_page"`   // physical page of the buffer's decode pool
	Descriptor int            `json:"descriptor"` // index in the plugin's answer
	Desc       *pd.Descriptor `json:"desc,omitempty"`
	Off        int            `json:"offset"` // from the base of the pool the bytes lie in (source: the prefill pool)
	Len        int            `json:"len"`
	Want       []byte         `json:"want,omitempty"` // at most oracle.MaxShown bytes from Off
	Got        []byte         `json:"got,omitempty"`
	Detail     string         `json:"detail"`
}

// NewViolation returns a violation of kind k located nowhere yet:
// every index -1.
func NewViolation(k oracle.Kind) Violation {
	return Violation{Kind: k, Room: -1, Page: -1, SrcPage: -1, DstPage: -1, Descriptor: -1}
}

// Where names what the violation is about, e.g. "room 0 (id 7) buffer
// L0.kv page 2 (src page 5 → dst page 9) descriptor #3".
func (v Violation) Where() string {
	parts := pd.WhereRoom(v.Room, v.RoomID)
	if v.Buffer != "" {
		parts = append(parts, "buffer "+v.Buffer)
	}
	if p := v.pages(); p != "" {
		parts = append(parts, p)
	}
	if v.Descriptor >= 0 {
		parts = append(parts, fmt.Sprintf("descriptor #%d", v.Descriptor))
	}
	return strings.Join(parts, " ")
}

func (v Violation) pages() string {
	var s string
	if v.Page >= 0 {
		s = fmt.Sprintf("page %d", v.Page)
	}
	switch {
	case v.SrcPage >= 0 && v.DstPage >= 0:
		s += fmt.Sprintf(" (src page %d → dst page %d)", v.SrcPage, v.DstPage)
	case v.SrcPage >= 0:
		s += fmt.Sprintf(" (src page %d)", v.SrcPage)
	case v.DstPage >= 0:
		s += fmt.Sprintf(" (dst page %d)", v.DstPage)
	}
	return strings.TrimSpace(s)
}

func (v Violation) String() string {
	return pd.ViolationLine(fmt.Sprintf("%s: %s", v.Kind, v.Where()), v.Off, v.Len, v.Detail)
}

// KindOf implements oracle.Typed.
func (v Violation) KindOf() oracle.Kind { return v.Kind }

// Generic is the violation in the form every kind's repro files hold: the
// buffer as the field, the destination (or source) page as the page, and
// the room and descriptor in the detail.
func (v Violation) Generic() oracle.Violation {
	page := v.DstPage
	if v.Kind == SourceWrite || page < 0 {
		page = v.SrcPage
	}
	detail := v.Detail
	if w := v.Where(); w != "" {
		detail = w + ": " + detail
	}
	return oracle.Violation{Kind: v.Kind, Row: oracle.NoRow, Page: page, Field: v.Buffer, Off: v.Off, Len: v.Len,
		Want: v.Want, Got: v.Got, Detail: detail}
}
