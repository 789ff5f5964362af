package rtmp

import "testing"

// More media batches in flight than the ring tells apart: the newest are
// merged, and the lag is never understated.
func TestInflightRingMergesNewest(t *testing.T) {
	f := &inflight{}
	const batches, size = 3 * inflightBatches, 100
	for i := range batches {
		f.wrote(size, true, uint32(i*10), uint32(i*10+5))
	}
	newest := uint32((batches-1)*10 + 5)
	for delivered := 0; delivered < batches*size; delivered += size / 2 {
		f.outq = int(f.written) - delivered
		trueLag := int64(newest) - int64(delivered/size*10) // first frame not yet delivered
		if got := f.lagMS(); got < trueLag {
			t.Fatalf("%d bytes delivered: lag %d ms, want at least %d", delivered, got, trueLag)
		}
		if delivered < (inflightBatches-1)*size {
			// Before the merged marks the lag is exact.
			if got := f.lagMS(); got != trueLag {
				t.Fatalf("%d bytes delivered: lag %d ms, want %d", delivered, got, trueLag)
			}
		}
	}
}
