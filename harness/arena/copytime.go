package arena

import (
	"errors"
	"fmt"
	"time"

	"github.com/kvharness/kvharness/harness/cuda"
)

// TimeCopy times one copy of n bytes from src at srcOff (on backend sb)
// to dst at dstOff (on backend db) in the harness's own process: a memmove
// between two host mappings, or a device-to-device copy timed by CUDA
// events on the source GPU's stream, a peer copy when the two live on
// different GPUs. It is the roofline a kind that moves pages (a transfer)
// is measured beside: the same bytes, moved by the plainest means.
func TimeCopy(db Backend, dst Memory, dstOff int, sb Backend, src Memory, srcOff, n int) (time.Duration, error) {
	type bytesOf interface{ Bytes() []byte }
	if s, ok := src.(bytesOf); ok {
		d, ok := dst.(bytesOf)
		if !ok {
			return 0, errors.New("reference copy: the destination is not host memory like the source")
		}
		from, to := s.Bytes()[srcOff:srcOff+n], d.Bytes()[dstOff:dstOff+n]
		start := time.Now()
		copy(to, from)
		return time.Since(start), nil
	}
	return timeDeviceCopy(db, dst, dstOff, sb, src, srcOff, n)
}

func timeDeviceCopy(db Backend, dst Memory, dstOff int, sb Backend, src Memory, srcOff, n int) (time.Duration, error) {
	sc, ok1 := sb.(CUDA)
	dc, ok2 := db.(CUDA)
	sp, ok3 := src.(interface{ Ptr() cuda.Ptr })
	dp, ok4 := dst.(interface{ Ptr() cuda.Ptr })
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return 0, errors.New("reference copy: both memories must be CUDA arenas, or both host memory")
	}
	dev := sc.Dev
	if dc.Dev != dev {
		if err := dev.EnablePeer(dc.Dev); err != nil {
			return 0, fmt.Errorf("reference copy: peer access from GPU %d to GPU %d: %w", dev.Ordinal(), dc.Dev.Ordinal(), err)
		}
	}
	s, err := dev.NewStream()
	if err != nil {
		return 0, err
	}
	defer s.Destroy()
	e0, err := dev.NewEvent()
	if err != nil {
		return 0, err
	}
	defer e0.Destroy()
	e1, err := dev.NewEvent()
	if err != nil {
		return 0, err
	}
	defer e1.Destroy()
	err = errors.Join(e0.Record(s), s.DtoDAsync(dp.Ptr().Add(dstOff), sp.Ptr().Add(srcOff), n), e1.Record(s))
	if err != nil {
		return 0, err
	}
	return cuda.Elapsed(e0, e1)
}
