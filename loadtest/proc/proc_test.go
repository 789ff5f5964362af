package proc

import (
	"os"
	"testing"
)

func TestSelf(t *testing.T) {
	self := []int{os.Getpid()}
	m := Start(self)
	x := 0
	for i := range 20_000_000 {
		x += i
	}
	_ = x
	s := m.Stop(1)
	if s == nil || s.CPUSeconds < 0 || s.RSSMiB <= 0 {
		t.Fatalf("%+v", s)
	}
	if Start(nil).Stop(1) != nil {
		t.Fatal("no pids: want no figures")
	}
	if CPUSeconds([]int{1 << 30}) != 0 {
		t.Fatal("a missing process counts 0")
	}
}

func TestParsePIDs(t *testing.T) {
	got, err := ParsePIDs("12, 34,")
	if err != nil || len(got) != 2 || got[0] != 12 || got[1] != 34 {
		t.Fatalf("%v %v", got, err)
	}
	for _, bad := range []string{"x", "-1", "0"} {
		if _, err := ParsePIDs(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
