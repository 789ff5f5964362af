package packager

import "testing"

// A batch the pump is still pushing when the stream stops (its
// subscription returned frames just before the cancel) must not close the
// change channel that stop closed: that panicked a relay in the drills.
func TestChangeAfterStopDoesNotPanic(t *testing.T) {
	st := testStream(t, Config{})
	st.stop()
	st.mu.Lock()
	defer st.mu.Unlock()
	st.seg.version++
	st.noteChange() // panicked with "close of closed channel"
	select {
	case <-st.changed:
	default:
		t.Fatal("the change channel of a stopped stream must stay closed (waiters wake at once)")
	}
}
