package hub

// rateWindow is how many whole seconds of media time the bitrate averages.
const rateWindow = 4

// bitrate measures bytes written per second of media time in one-second
// buckets (a ring indexed by the second of the timestamp).
type bitrate struct {
	sec     [rateWindow + 2]uint32
	bytes   [rateWindow + 2]uint64
	used    [rateWindow + 2]bool
	first   uint32 // second of the first frame
	started bool
}

func (b *bitrate) add(ts uint32, n int) {
	s := ts / 1000
	if !b.started {
		b.started, b.first = true, s
	}
	i := s % uint32(len(b.sec))
	if !b.used[i] || b.sec[i] != s {
		b.sec[i], b.bytes[i], b.used[i] = s, 0, true
	}
	b.bytes[i] += uint64(n)
}

// kbps averages over the last rateWindow whole seconds before the second of
// now (fewer at the start of a stream); 0 before one whole second is known.
func (b *bitrate) kbps(now uint32) int {
	if !b.started {
		return 0
	}
	cur := now / 1000
	var sum uint64
	secs := 0
	for k := uint32(1); k <= rateWindow; k++ {
		s := cur - k
		if int32(s-b.first) < 0 || s > cur {
			break
		}
		secs++
		i := s % uint32(len(b.sec))
		if b.used[i] && b.sec[i] == s {
			sum += b.bytes[i]
		}
	}
	if secs == 0 {
		return 0
	}
	return int(sum * 8 / 1000 / uint64(secs))
}

func (b *bitrate) reset() { *b = bitrate{} }
