package drills

import (
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestOneWay(t *testing.T) {
	for _, a := range Regions {
		if d := OneWay(a, a); d != 5*time.Millisecond {
			t.Errorf("inside %s: %v, want 5ms", a, d)
		}
		for _, b := range Regions {
			if OneWay(a, b) != OneWay(b, a) {
				t.Errorf("%s–%s not symmetric", a, b)
			}
			if a != b && (OneWay(a, b) < 40*time.Millisecond || OneWay(a, b) > 150*time.Millisecond) {
				t.Errorf("%s–%s: %v, want 40–150 ms", a, b, OneWay(a, b))
			}
		}
	}
}

func TestRegionOf(t *testing.T) {
	for addr, want := range map[string]string{
		"198.18.1.10:1935": "eu", "198.18.2.7:5": "na", "198.18.3.200:80": "as",
		"198.18.4.1:1": "", "127.0.0.1:1935": "", "10.77.12.1:1": "", "[::1]:80": "",
	} {
		a, _ := net.ResolveTCPAddr("tcp", addr)
		if got := RegionOf(a); got != want {
			t.Errorf("RegionOf(%s) = %q, want %q", addr, got, want)
		}
	}
}

// requireNetns skips where namespaces cannot be made, and fails in CI.
func requireNetns(t *testing.T) {
	t.Helper()
	if err := Available(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("network namespaces are required in CI: %v", err)
		}
		t.Skipf("network namespaces cannot be made here: %v", err)
	}
}

// Sockets made through NS.Listen and NS.Dial live in their namespaces: a
// client in one reaches a server in the other over the veth, with its own
// address; Close removes the namespaces.
func TestLabSocketsInNamespaces(t *testing.T) {
	requireNetns(t)
	lab, err := NewLab()
	if err != nil {
		t.Fatal(err)
	}
	defer lab.Close()
	a, err := lab.NS("a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := lab.NS("b")
	if err != nil {
		t.Fatal(err)
	}
	if err := Veth(a, "eth0", b, "eth0"); err != nil {
		t.Fatal(err)
	}
	if err := a.IP("addr", "add", "10.77.0.1/24", "dev", "eth0"); err != nil {
		t.Fatal(err)
	}
	if err := b.IP("addr", "add", "10.77.0.2/24", "dev", "eth0"); err != nil {
		t.Fatal(err)
	}
	ln, err := b.Listen("10.77.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- err.Error()
			return
		}
		defer c.Close()
		_, _ = io.WriteString(c, "hi")
		got <- c.RemoteAddr().String()
	}()
	// The root namespace has no 10.77.0.0/24: only a's socket can reach it.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := a.Dial(ctx, ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, 2)
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "hi" {
		t.Fatalf("read %q, %v", buf, err)
	}
	if r := <-got; !strings.HasPrefix(r, "10.77.0.1:") {
		t.Fatalf("server saw the client as %s, want 10.77.0.1", r)
	}
	// A process started in a namespace is inside it.
	out, err := a.Command("ip", "-o", "-4", "addr", "show", "dev", "eth0").Output()
	if err != nil || !strings.Contains(string(out), "10.77.0.1/24") {
		t.Fatalf("ip addr in %s: %s %v", a.Name, out, err)
	}
	lab.Close()
	list, _ := exec.Command("ip", "netns", "list").Output()
	if strings.Contains(string(list), lab.Prefix) {
		t.Fatalf("namespaces left after Close:\n%s", list)
	}
}
