package pdasync

import (
	"fmt"

	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// judgeNote checks one notification of the prefill against the gates the
// harness set: a handle is done only once its gate was opened, failed only
// once it was failed; a component only once every one of its handles was
// told, done only when none failed. It then records the note.
func (r *run) judgeNote(n *kvpb.AsyncNotification) {
	ri, ok := r.w.ids[n.Room]
	if !ok || !r.w.rooms[ri].posted || int(n.Component) >= len(r.c.Rooms[ri].Components) {
		v := r.violation(Completion)
		v.Detail = fmt.Sprintf("the prefill notified %s, of no room or component it was asked to post", noteString(n))
		r.res.Add(v)
		return
	}
	if isHandleNote(n.Note) {
		r.judgeHandleNote(ri, n)
		return
	}
	r.judgeComponentNote(ri, n)
}

func (r *run) judgeHandleNote(ri int, n *kvpb.AsyncNotification) {
	hi := int(n.Handle)
	v := r.roomViolation(Completion, ri)
	if hi >= len(r.w.handles) || r.w.handles[hi].ref.Room != ri || r.w.handles[hi].ref.Comp != int(n.Component) {
		v.Detail = fmt.Sprintf("the prefill notified %s: no handle of that room and component has that gate", noteString(n))
		r.res.Add(v)
		return
	}
	h := r.w.handles[hi]
	v.Handle = h.ref.String()
	done := n.Note == kvpb.AsyncNote_ASYNC_NOTE_HANDLE_DONE
	switch {
	case h.told != 0:
		v.Detail = fmt.Sprintf("the prefill notified the handle twice (%v at %s, then %v)", h.told, h.tellAt, n.Note)
	case done && h.gate == gateHeld:
		v.Detail = "the prefill reported the handle done while the harness still holds its gate: none of its copies can have run (a successful post or poll only means the transfer started)"
		// Once it opens the gate, the harness could no longer tell when the
		// copies land: what followed would depend on timing. The run ends.
		r.stop = true
	case done && h.gate == gateFail:
		v.Detail = fmt.Sprintf("the prefill reported the handle done, but the harness failed it at %s", h.setAt)
	case !done && h.gate != gateFail:
		v.Detail = fmt.Sprintf("the prefill reported the handle failed, but the harness %s", gateWords(h))
	default:
		v.Detail = ""
	}
	if v.Detail != "" {
		r.res.Add(v)
	}
	if h.told == 0 {
		h.told, h.tellAt = n.Note, r.at
	}
}

func gateWords(h *handleInfo) string {
	if h.gate == gateHeld {
		return "still holds its gate"
	}
	return "opened its gate at " + h.setAt
}

func (r *run) judgeComponentNote(ri int, n *kvpb.AsyncNotification) {
	ci := int(n.Component)
	info := r.w.rooms[ri]
	v := r.roomViolation(Completion, ri)
	failed, pending := false, ""
	for _, hi := range r.w.handlesOf(ri, ci) {
		h := r.w.handles[hi]
		failed = failed || h.told == kvpb.AsyncNote_ASYNC_NOTE_HANDLE_FAILED
		if h.told == 0 && pending == "" {
			pending = h.ref.String() + " (" + gateWords(h) + ")"
		}
	}
	done := n.Note == kvpb.AsyncNote_ASYNC_NOTE_COMPONENT_DONE
	switch {
	case info.compTold[ci] != 0:
		v.Detail = fmt.Sprintf("the prefill notified component %d twice (%v, then %v)", ci, info.compTold[ci], n.Note)
	case pending != "":
		v.Detail = fmt.Sprintf("the prefill reported component %d %s before its handle %s ended", ci, noteVerb(done), pending)
	case done && failed:
		v.Detail = fmt.Sprintf("the prefill reported component %d done though one of its handles failed", ci)
	case !done && !failed:
		v.Detail = fmt.Sprintf("the prefill reported component %d failed though every handle of it is done", ci)
	default:
		v.Detail = ""
	}
	if v.Detail != "" {
		r.res.Add(v)
	}
	if info.compTold[ci] == 0 {
		info.compTold[ci] = n.Note
	}
}

func noteVerb(done bool) string {
	if done {
		return "done"
	}
	return "failed"
}
