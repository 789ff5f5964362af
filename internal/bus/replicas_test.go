package bus

import "testing"

// TestReplicasStandalone: a server without a cluster gets one replica.
func TestReplicasStandalone(t *testing.T) {
	_, c := startBus(t)
	if r := c.replicas(0); r != 1 {
		t.Fatalf("replicas without a cluster: %d, want 1", r)
	}
}
