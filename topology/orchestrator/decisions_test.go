package orchestrator

import (
	"strconv"
	"testing"
)

func TestDecisionLogKeepsTheNewest(t *testing.T) {
	var l decisionLog
	if got := l.list(); len(got) != 0 {
		t.Fatalf("empty log: %v", got)
	}
	for i := range maxDecisions + 10 {
		l.add(Decision{Server: strconv.Itoa(i)})
	}
	got := l.list()
	if len(got) != maxDecisions {
		t.Fatalf("%d decisions", len(got))
	}
	if got[0].Server != strconv.Itoa(maxDecisions+9) || got[len(got)-1].Server != "10" {
		t.Fatalf("order: first %s, last %s", got[0].Server, got[len(got)-1].Server)
	}
}
