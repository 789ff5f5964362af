package access

import "testing"

func TestMatch(t *testing.T) {
	cases := []struct {
		p, s string
		ok   bool
	}{
		{"", "anything", true}, {"*", "", true}, {"live/*", "live/room", true},
		{"live/*", "live/a/b", true}, {"live/*", "vod/room", false}, {"a*c", "abbbc", true},
		{"a*c", "abbbd", false}, {"*.mod", "user.mod", true}, {"exact", "exact", true},
		{"exact", "exact2", false}, {"a*b*c", "axxbyyc", true}, {"a*b*c", "axxcyyb", false},
		{"**", "x", true}, {"x*", "", false},
	}
	for _, c := range cases {
		if Match(c.p, c.s) != c.ok {
			t.Errorf("Match(%q, %q) != %v", c.p, c.s, c.ok)
		}
	}
}

func TestAllowed(t *testing.T) {
	rs := Rules{
		{Scope: "live/*", Object: "chat", Op: OpWrite, Key: "topic", Who: Publisher},
		{Scope: "live/*", Object: "chat", Op: OpWrite, Who: Anyone},
		{Scope: "live/*", Op: OpWrite, Who: Nobody},
		{Object: "chat", Op: OpSend, Key: "ban*", Who: Publisher},
	}
	if err := rs.Validate(); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		op                 Op
		scope, object, key string
		role               Role
		ok                 bool
	}{
		{OpWrite, "live/r", "chat", "topic", RoleViewer, false},
		{OpWrite, "live/r", "chat", "topic", RolePublisher, true},
		{OpWrite, "live/r", "chat", "topic", RoleRelay, true},
		{OpWrite, "live/r", "chat", "msg", RoleViewer, true},
		{OpWrite, "live/r", "scores", "a", RolePublisher, false},
		{OpWrite, "live/r", "scores", "a", RoleRelay, false},
		{OpWrite, "other/r", "scores", "a", RoleViewer, true},
		{OpSend, "live/r", "chat", "banUser", RoleViewer, false},
		{OpSend, "live/r", "chat", "say", RoleViewer, true},
	}
	for _, c := range cases {
		if got := rs.Allowed(c.op, c.scope, c.object, c.key, c.role); got != c.ok {
			t.Errorf("%+v: got %v", c, got)
		}
	}
	if (Rules{{Op: "read", Who: Anyone}}).Validate() == nil || (Rules{{Op: OpSend, Who: "x"}}).Validate() == nil {
		t.Error("bad rules validated")
	}
	if RoleRelay.String() != "relay" || Role(9).String() != "role(9)" {
		t.Error("role names")
	}
}
