package cuda

import (
	"errors"
	"fmt"
	"slices"
)

// Piece is a backed stretch of a sparse reservation: bytes [Off, Off+Len)
// of it. The allocation behind a sparse Shared holds its pieces back to
// back, in order.
type Piece struct{ Off, Len int }

// End is the first byte after the piece.
func (p Piece) End() int { return p.Off + p.Len }

// AllocSparse reserves span bytes of address space and backs only the
// pieces want (rounded out to the allocation granularity, merged where
// they meet, and where there are more than MaxPieces merged across the
// narrowest gaps) with an allocation each, which ExportFDs shares: a pool
// reaching past 4 GiB of offsets whose cases touch a few windows costs
// those windows. An access anywhere else faults. Pieces gives the rounded
// pieces, which an importer maps with ImportSparse. The memory is not
// cleared.
func (d *Device) AllocSparse(span int, want []Piece) (*Shared, error) {
	if span <= 0 || len(want) == 0 {
		return nil, fmt.Errorf("cuda: AllocSparse(%d, %d pieces): want a positive span and pieces", span, len(want))
	}
	s := &Shared{d: d}
	err := d.vmmCall(func(a *driverAPI, v *vmmAPI) error {
		prop := d.sharedProp()
		g, err := granularity(v, &prop)
		if err != nil {
			return err
		}
		s.span = int((uint64(span) + g - 1) / g * g)
		if s.pieces, err = roundPieces(want, int(g), s.span); err != nil {
			return err
		}
		return s.backAndMap(v, g, func(h *uint64, i int) error {
			return check("cuMemCreate", v.cuMemCreate(h, uint64(s.pieces[i].Len), &prop, 0))
		})
	})
	if err != nil {
		return nil, fmt.Errorf("reserve %d bytes of shareable device memory, %d pieces backed: %w", span, len(want), err)
	}
	return s, nil
}

// ImportSparse maps a sparse reservation another process made with
// AllocSparse and exported with ExportFDs: fds one per piece, span its
// Span, pieces its Pieces. The caller may close the fds afterwards.
func (d *Device) ImportSparse(fds []int, span int, pieces []Piece) (*Shared, error) {
	s := &Shared{d: d, span: span, pieces: slices.Clone(pieces)}
	err := d.vmmCall(func(a *driverAPI, v *vmmAPI) error {
		prop := d.sharedProp()
		g, err := granularity(v, &prop)
		if err != nil {
			return err
		}
		if err := checkPieces(s.pieces, int(g), span); err != nil {
			return err
		}
		if len(fds) != len(s.pieces) {
			return fmt.Errorf("cuda: %d descriptors for %d pieces; want one per piece", len(fds), len(s.pieces))
		}
		return s.backAndMap(v, g, func(h *uint64, i int) error {
			return check("cuMemImportFromShareableHandle", v.cuMemImportFromShareableHandle(h, uintptr(fds[i]), memHandleTypePosixFD))
		})
	})
	if err != nil {
		return nil, fmt.Errorf("import sparse device memory from %d descriptors: %w", len(fds), err)
	}
	return s, nil
}

// backAndMap gives each piece the allocation handle(i) makes (created
// here, or imported), then maps them all; on a failure it releases what
// it took.
func (s *Shared) backAndMap(v *vmmAPI, align uint64, handle func(h *uint64, i int) error) error {
	for i, p := range s.pieces {
		s.size += p.Len
		var h uint64
		if err := handle(&h, i); err != nil {
			s.release(v)
			return err
		}
		s.handles = append(s.handles, h)
	}
	if err := s.mapSparse(v, align); err != nil {
		s.release(v)
		return err
	}
	return nil
}

// release releases the pieces' allocations.
func (s *Shared) release(v *vmmAPI) error {
	var errs []error
	for _, h := range s.handles {
		errs = append(errs, check("cuMemRelease", v.cuMemRelease(h)))
	}
	s.handles = nil
	return errors.Join(errs...)
}

// Pieces are a sparse Shared's backed pieces; nil for a dense one.
func (s *Shared) Pieces() []Piece { return slices.Clone(s.pieces) }

// Span is the reserved address range: Size for a dense Shared, more for a
// sparse one.
func (s *Shared) Span() int {
	if s.pieces == nil {
		return s.size
	}
	return s.span
}

// MaxPieces bounds a sparse reservation's pieces: each is an allocation
// and a descriptor, and one message carries at most 250 descriptors.
const MaxPieces = 240

// MergeGap is the widest gap between two pieces that are backed as one
// allocation. Each piece costs a cuMemCreate, an export, and in the
// importer an import, a map and an access call in each process: opening
// a far pool's reservation piece by piece took 0.6 to 1.5 s a row on an
// H100, where backing a gap of up to 32 MiB costs device memory alone (a
// far store pool's windows at 0, 16 MiB and past its 4 GiB end then take
// one piece, not three).
const MergeGap = 32 << 20

// roundPieces rounds want out to multiples of g, merges what meets,
// overlaps or lies within MergeGap, merges across the narrowest gaps
// while there are more than MaxPieces, and checks that it fits span.
func roundPieces(want []Piece, g, span int) ([]Piece, error) {
	var ps []Piece
	for _, p := range want {
		if p.Len <= 0 {
			continue
		}
		lo, hi := p.Off/g*g, (p.End()+g-1)/g*g
		ps = append(ps, Piece{lo, hi - lo})
	}
	slices.SortFunc(ps, func(a, b Piece) int { return a.Off - b.Off })
	var out []Piece
	for _, p := range ps {
		if n := len(out); n > 0 && p.Off <= out[n-1].End()+MergeGap {
			out[n-1].Len = max(out[n-1].End(), p.End()) - out[n-1].Off
			continue
		}
		out = append(out, p)
	}
	for len(out) > MaxPieces {
		out = mergeNarrowestGap(out)
	}
	return out, checkPieces(out, g, span)
}

// mergeNarrowestGap joins the two neighbouring pieces that have the
// fewest bytes between them.
func mergeNarrowestGap(ps []Piece) []Piece {
	best := 1
	for i := 2; i < len(ps); i++ {
		if ps[i].Off-ps[i-1].End() < ps[best].Off-ps[best-1].End() {
			best = i
		}
	}
	ps[best-1].Len = ps[best].End() - ps[best-1].Off
	return slices.Delete(ps, best, best+1)
}

// checkPieces checks pieces as an importer takes them: sorted, apart,
// granularity multiples, inside span.
func checkPieces(ps []Piece, g, span int) error {
	if len(ps) == 0 {
		return errors.New("cuda: a sparse reservation needs pieces")
	}
	end := 0
	for i, p := range ps {
		if p.Off < end || p.Len <= 0 || p.Off%g != 0 || p.Len%g != 0 || p.End() > span {
			return fmt.Errorf("cuda: piece %d [%d,%d) of a %d-byte reservation: want sorted, apart, in it, multiples of %d",
				i, p.Off, p.End(), span, g)
		}
		end = p.End()
	}
	return nil
}

// mapSparse reserves span bytes aligned to align and maps each piece's
// allocation there, whole (the driver maps from an allocation's start
// only: a nonzero offset is CUDA_ERROR_NOT_SUPPORTED), readable and
// writable by this device.
func (s *Shared) mapSparse(v *vmmAPI, align uint64) error {
	var p uint64
	if err := check("cuMemAddressReserve", v.cuMemAddressReserve(&p, uint64(s.span), align, 0, 0)); err != nil {
		return err
	}
	desc := memAccessDesc{location: s.d.location(), flags: memAccessReadWrite}
	for i, pc := range s.pieces {
		err := check("cuMemMap", v.cuMemMap(p+uint64(pc.Off), uint64(pc.Len), 0, s.handles[i], 0))
		if err == nil {
			if err = check("cuMemSetAccess", v.cuMemSetAccess(p+uint64(pc.Off), uint64(pc.Len), &desc, 1)); err != nil {
				v.cuMemUnmap(p+uint64(pc.Off), uint64(pc.Len))
			}
		}
		if err != nil {
			for _, q := range s.pieces[:i] {
				v.cuMemUnmap(p+uint64(q.Off), uint64(q.Len))
			}
			v.cuMemAddressFree(p, uint64(s.span))
			return err
		}
	}
	s.ptr = Ptr(p)
	return nil
}

// freeSparse unmaps every piece, frees the reservation and releases the
// pieces' allocations.
func (s *Shared) freeSparse(v *vmmAPI) error {
	var errs []error
	for _, pc := range s.pieces {
		errs = append(errs, check("cuMemUnmap", v.cuMemUnmap(uint64(s.ptr)+uint64(pc.Off), uint64(pc.Len))))
	}
	errs = append(errs, check("cuMemAddressFree", v.cuMemAddressFree(uint64(s.ptr), uint64(s.span))))
	return errors.Join(append(errs, s.release(v))...)
}
