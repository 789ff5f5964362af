// Package certreload serves a certificate and key pair from files and
// picks up new files without a restart: a tls.Config's GetCertificate asks
// the Reloader, which re-reads the pair when either file's modification
// time or size changed (checked at most once per CheckInterval).
package certreload

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// CheckInterval is how often, at most, the files are looked at.
const CheckInterval = time.Second

// Reloader holds the current certificate of a cert/key file pair.
type Reloader struct {
	certFile, keyFile string
	log               *slog.Logger

	mu      sync.Mutex
	cert    *tls.Certificate
	stamp   [2]fileStamp
	checked time.Time
	now     func() time.Time
}

type fileStamp struct {
	mod  time.Time
	size int64
}

// New loads the pair; it fails when the files cannot be read or do not match.
func New(certFile, keyFile string, log *slog.Logger) (*Reloader, error) {
	if certFile == "" || keyFile == "" {
		return nil, errors.New("tls: both a certificate and a key file are needed")
	}
	if log == nil {
		log = slog.Default()
	}
	r := &Reloader{certFile: certFile, keyFile: keyFile, log: log, now: time.Now}
	if err := r.load(); err != nil {
		return nil, err
	}
	return r, nil
}

func stat(path string) (fileStamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{fi.ModTime(), fi.Size()}, nil
}

// load reads the files; r.mu is held or r is not shared yet.
func (r *Reloader) load() error {
	cs, err := stat(r.certFile)
	if err != nil {
		return fmt.Errorf("tls certificate: %w", err)
	}
	ks, err := stat(r.keyFile)
	if err != nil {
		return fmt.Errorf("tls key: %w", err)
	}
	c, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		return fmt.Errorf("tls certificate %s: %w", r.certFile, err)
	}
	r.cert, r.stamp = &c, [2]fileStamp{cs, ks}
	return nil
}

// Certificate returns the current certificate, re-reading the files when
// they changed. A pair that fails to load (e.g. half written) keeps the
// previous certificate, and is tried again at the next check.
func (r *Reloader) Certificate() *tls.Certificate {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	if now.Sub(r.checked) < CheckInterval {
		return r.cert
	}
	r.checked = now
	cs, err1 := stat(r.certFile)
	ks, err2 := stat(r.keyFile)
	if err1 != nil || err2 != nil || [2]fileStamp{cs, ks} == r.stamp {
		return r.cert
	}
	old := r.cert
	if err := r.load(); err != nil {
		r.log.Warn("tls certificate not reloaded, keeping the previous one", "cert", r.certFile, "err", err)
		r.cert = old
		return r.cert
	}
	r.log.Info("tls certificate reloaded", "cert", r.certFile, "not_after", notAfter(r.cert))
	return r.cert
}

func notAfter(c *tls.Certificate) string {
	if c.Leaf != nil {
		return c.Leaf.NotAfter.UTC().Format(time.RFC3339)
	}
	if len(c.Certificate) > 0 {
		if l, err := x509.ParseCertificate(c.Certificate[0]); err == nil {
			return l.NotAfter.UTC().Format(time.RFC3339)
		}
	}
	return ""
}

// GetCertificate is tls.Config.GetCertificate.
func (r *Reloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return r.Certificate(), nil
}

// ServerConfig returns a TLS server configuration serving r's certificate,
// with HTTP/2 and HTTP/1.1 offered by ALPN when http is set.
func (r *Reloader) ServerConfig(http bool) *tls.Config {
	c := &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: r.GetCertificate}
	if http {
		c.NextProtos = []string{"h2", "http/1.1"}
	}
	return c
}

// ClientConfig returns a TLS client configuration that trusts the system
// roots, or only the certificates of caFile when it is not empty.
func ClientConfig(caFile string) (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile == "" {
		return c, nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("tls ca file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("tls ca file %s: no PEM certificate in it", caFile)
	}
	c.RootCAs = pool
	return c, nil
}
