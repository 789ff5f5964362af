package certreload

import (
	"crypto/tls"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// servedCN dials addr and returns the common name of the certificate served.
func servedCN(t *testing.T, addr string) string {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].Subject.CommonName
}

func TestReplacedCertificateIsServed(t *testing.T) {
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := WriteSelfSigned(cert, key, "first"); err != nil {
		t.Fatal(err)
	}
	r, err := New(cert, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	clock := time.Now()
	r.now = func() time.Time { return clock }
	ln, err := tls.Listen("tcp", "127.0.0.1:0", r.ServerConfig(false))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn) {
				_ = c.(*tls.Conn).Handshake()
				c.Close()
			}(c)
		}
	}()
	if cn := servedCN(t, ln.Addr().String()); cn != "first" {
		t.Fatalf("served %q", cn)
	}
	if err := WriteSelfSigned(cert, key, "second"); err != nil {
		t.Fatal(err)
	}
	// Same size files: make the modification time differ for sure.
	later := time.Now().Add(2 * time.Second)
	_ = os.Chtimes(cert, later, later)
	clock = clock.Add(2 * CheckInterval)
	if cn := servedCN(t, ln.Addr().String()); cn != "second" {
		t.Fatalf("after replacing the files, served %q", cn)
	}
	// A broken file keeps the last good certificate.
	if err := os.WriteFile(cert, []byte("not a certificate"), 0o644); err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(2 * CheckInterval)
	if cn := servedCN(t, ln.Addr().String()); cn != "second" {
		t.Fatalf("after a broken file, served %q", cn)
	}
}

func TestClientConfig(t *testing.T) {
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := WriteSelfSigned(cert, key, "ca"); err != nil {
		t.Fatal(err)
	}
	c, err := ClientConfig(cert)
	if err != nil || c.RootCAs == nil {
		t.Fatalf("%v", err)
	}
	if _, err := ClientConfig(key + ".missing"); err == nil {
		t.Fatal("missing CA file accepted")
	}
	if _, err := ClientConfig(key); err == nil {
		t.Fatal("a key as CA file accepted")
	}
	if _, err := New(cert, "", nil); err == nil {
		t.Fatal("no key accepted")
	}
}
