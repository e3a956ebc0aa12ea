package layout

import "testing"

// BenchmarkFootprint times the oracle's per-slot and per-byte questions
// on today's layouts: a slot's spans (asked for every row of every case)
// and the owner of a pool byte (asked for every byte of a diff).
func BenchmarkFootprint(b *testing.B) {
	for _, name := range []string{"bf16", "fp8-paged", "fp8-rows", "fp8-ds-mla", "dsv4-main"} {
		l, err := Builtin(name, 0, 64)
		if err != nil {
			b.Fatal(err)
		}
		slots := 4096
		b.Run(name+"/footprint", func(b *testing.B) {
			var slot int64
			for b.Loop() {
				if len(l.Footprint(slot)) == 0 {
					b.Fatal("no spans")
				}
				slot = (slot + 97) % int64(slots)
			}
		})
		b.Run(name+"/locate", func(b *testing.B) {
			pool := l.PoolBytes(slots)
			off := 0
			for b.Loop() {
				if _, ok := l.Locate(off, slots); !ok && name != "dsv4-main" {
					b.Fatal("no owner at", off)
				}
				off = (off + 4099) % pool
			}
		})
	}
}
