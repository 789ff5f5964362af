package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/relaymesh/relaymesh/internal/playtoken"
)

func init() {
	register(command{name: "play-token", summary: "sign a play token for a protected stream (docs/security.md)", run: runPlayToken})
}

// runPlayToken prints a play token for app/name, and with --url the
// RTMP, HLS and DASH URLs of a server carrying it.
func runPlayToken(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("play-token", flag.ContinueOnError)
	secretFile := fs.String("secret-file", "", "file holding the play token secret (default: $RELAYMESH_PLAY_TOKEN_SECRET)")
	stream := fs.String("stream", "", "APP/NAME the token plays (required)")
	ttl := fs.Duration("ttl", 10*time.Minute, "lifetime of the token")
	rtmpAddr := fs.String("rtmp", "", "host:port of a server: also print its RTMP URL with the token")
	httpAddr := fs.String("http", "", "host:port of a server: also print its HLS and DASH URLs with the token")
	if err := fs.Parse(args); err != nil {
		return err
	}
	secret := os.Getenv("RELAYMESH_PLAY_TOKEN_SECRET")
	if *secretFile != "" {
		b, err := os.ReadFile(*secretFile)
		if err != nil {
			return err
		}
		secret = strings.TrimSpace(string(b))
	}
	if secret == "" {
		return errors.New("no secret: use --secret-file FILE or RELAYMESH_PLAY_TOKEN_SECRET")
	}
	app, name, ok := strings.Cut(*stream, "/")
	if !ok || app == "" || name == "" || *ttl <= 0 {
		return errors.New("--stream APP/NAME and a positive --ttl are required")
	}
	tok := playtoken.Sign([]byte(secret), app, name, time.Now().Add(*ttl))
	fmt.Println(tok)
	if *rtmpAddr != "" {
		fmt.Printf("rtmp://%s/%s/%s?token=%s\n", *rtmpAddr, app, name, tok)
	}
	if *httpAddr != "" {
		fmt.Printf("http://%s/hls/%s/%s/t/%s/index.m3u8\n", *httpAddr, app, name, tok)
		fmt.Printf("http://%s/dash/%s/%s/t/%s/manifest.mpd\n", *httpAddr, app, name, tok)
	}
	return nil
}
