package gstplay

import (
	"testing"
	"time"
)

func TestPTS(t *testing.T) {
	line := `/GstPipeline:pipeline0/GstPlayBin3:playbin3/GstPlaySink:playsink/GstBin:vbin/GstFakeSink:fakesink0: last-message = chain   ******* (fakesink0:sink) (1234 bytes, dts: 0:00:01.000000000, pts: 1:02:03.040000000, duration: 0:00:00.040000000, offset: -1, offset_end: -1, flags: 00000000 ) 0x7f`
	got, ok := PTS(line)
	if want := time.Hour + 2*time.Minute + 3*time.Second + 40*time.Millisecond; !ok || got != want {
		t.Fatalf("PTS = %v, %v; want %v", got, ok, want)
	}
	for _, l := range []string{"", "pts: 0:00:01.000000000", "fakesink0: last-message = preroll pts: 0:00:01.000000000"} {
		if _, ok := PTS(l); ok {
			t.Errorf("PTS(%q) reported a buffer", l)
		}
	}
}
