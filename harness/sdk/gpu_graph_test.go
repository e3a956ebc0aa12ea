package sdk_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/kvharness/kvharness/harness/sdk/store"
)

// TestGraphReplayIncident reproduces the incident: a store captured in a
// CUDA graph at capacity 8 (8 valid rows) and replayed with 3 valid rows
// under sink padding. The pad-unaware bf16scatter writes the padded rows
// into the reserved slot 0; the padding-aware fusedstore leaves it alone.
func TestGraphReplayIncident(t *testing.T) {
	dev := openDevice(t)
	for _, tc := range []struct {
		name       string
		writesSink bool
	}{{"bf16scatter", true}, {"fusedstore", false}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			p := startPlugin(t, tc.name)
			pl := newPlan([]string{"bf16"}, 128, 64, 64, 8)
			ga := newGPUArena(t, dev, pl.size)
			defer ga.free()
			defer p.Detach(ctx)
			_, err := p.Attach(ctx, ga, pl.attach(ga.desc(), ""))
			must(t, err)
			img := bytes.Repeat([]byte{0x5a}, pl.size)
			base := int(pl.pools[0].Pool.Offset)

			rng := rand.New(rand.NewPCG(8, 3))
			c := storeCase{capacity: 8, n: 8, padding: store.PadSink}
			for i := range 8 {
				c.rows, c.loc = append(c.rows, drawRow(rng, 128)...), append(c.loc, int64(10+i))
			}
			c.stage(img, pl)
			ga.write(t, 0, img)
			must(t, storeOn(ctx, p, c.request(pl, true))) // capture at capacity 8, replay
			if got := ga.read(t); !bytes.Equal(got[base+10*256:base+18*256], rowBytes(c.rows)) {
				t.Fatal("the captured store did not write slots 10..17")
			}

			pad := drawRow(rng, 128)
			for i := 3; i < 8; i++ {
				copy(c.rows[i*128:], pad)
				c.loc[i] = 0
			}
			c.n = 3
			c.stage(img, pl)
			ga.write(t, pl.rowsOff, img[pl.rowsOff:])
			must(t, storeOn(ctx, p, c.request(pl, true))) // replay with n = 3
			slot0 := ga.read(t)[base : base+256]
			switch {
			case tc.writesSink && !bytes.Equal(slot0, rowBytes(pad)):
				t.Errorf("replayed with 3 valid rows, the scatter did not write the padded row into slot 0: % x", slot0[:16])
			case !tc.writesSink && !bytes.Equal(slot0, bytes.Repeat([]byte{0x5a}, 256)):
				t.Errorf("replayed with 3 valid rows, the padding-aware store changed slot 0: % x", slot0[:16])
			}
		})
	}
}

func rowBytes(rows []uint16) []byte {
	b := make([]byte, 2*len(rows))
	for i, r := range rows {
		binary.LittleEndian.PutUint16(b[2*i:], r)
	}
	return b
}
