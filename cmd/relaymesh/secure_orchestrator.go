package main

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"net"
	"time"

	"github.com/relaymesh/relaymesh/internal/certreload"
	"github.com/relaymesh/relaymesh/internal/playtoken"
)

// redirectorFlags: the play tokens the redirector issues, and HTTPS for
// the redirector, the mesh API and the dashboard.
type redirectorFlags struct {
	playSecret       string
	playTTL, step    time.Duration
	https, cert, key string
}

func (f *redirectorFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.playSecret, "play-token-secret", "", "secret that signs the play tokens redirects carry (?token=); the relays' and primary's --play-token-secret")
	fs.DurationVar(&f.playTTL, "play-token-ttl", 10*time.Minute, "lifetime of an issued play token: a viewer must start playing within it (a playing one goes on)")
	fs.DurationVar(&f.step, "play-token-step", time.Minute, "expiries are rounded up to a multiple of this, so viewers of a stream share one token (and CDN cache entries)")
	fs.StringVar(&f.https, "https", "", "HTTPS listen address serving what --http serves (needs --tls-cert and --tls-key)")
	fs.StringVar(&f.cert, "tls-cert", "", "PEM certificate chain of --https, re-read when the file changes")
	fs.StringVar(&f.key, "tls-key", "", "PEM private key of --tls-cert")
}

func (f *redirectorFlags) apply(cp *controlPlane) error {
	if f.playSecret != "" {
		if f.playTTL <= 0 {
			return errors.New("--play-token-ttl must be positive")
		}
		secret, ttl, step := []byte(f.playSecret), f.playTTL, f.step
		cp.playToken = func(app, name string) string {
			return playtoken.Sign(secret, app, name, playtoken.Window(time.Now(), ttl, step))
		}
	}
	if f.https == "" {
		return nil
	}
	certs, err := certreload.New(f.cert, f.key, cp.log)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", f.https)
	if err != nil {
		return fmt.Errorf("https listen: %w", err)
	}
	cp.httpsLn = tls.NewListener(ln, certs.ServerConfig(true))
	return nil
}
