package geo

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"

	"github.com/relaymesh/relaymesh/internal/testlog"
)

var testAddr = netip.MustParseAddr("81.2.69.142")

// cityDB builds a tiny City database placing 81.2.69.0/24 in country.
func cityDB(t testing.TB, country string) []byte {
	t.Helper()
	tree, err := mmdbwriter.New(mmdbwriter.Options{
		DatabaseType: "GeoIP2-City",
		RecordSize:   24,
		Description:  map[string]string{"en": "reload test"}, // Verify wants one
	})
	if err != nil {
		t.Fatal(err)
	}
	_, n, _ := net.ParseCIDR("81.2.69.0/24")
	if err := tree.Insert(n, mmdbtype.Map{
		"country":   mmdbtype.Map{"iso_code": mmdbtype.String(country)},
		"continent": mmdbtype.Map{"code": mmdbtype.String("EU")},
	}); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := tree.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// replace writes data beside path and renames it into place.
func replace(t testing.TB, path string, data []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func countryOf(t testing.TB, l Locator) string {
	t.Helper()
	loc, err := l.Lookup(testAddr)
	if err != nil {
		t.Fatal(err)
	}
	return loc.Country
}

func TestReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "city.mmdb")
	if _, err := NewReloader(ReloaderConfig{Path: path}, nil); err == nil {
		t.Fatal("NewReloader of a missing file succeeded")
	}
	replace(t, path, cityDB(t, "GB"))
	var logs testlog.Buffer
	r, err := NewReloader(ReloaderConfig{Path: path}, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if got := countryOf(t, r); got != "GB" {
		t.Fatalf("country %q, want GB", got)
	}
	first := r.Current()

	replace(t, path, cityDB(t, "FR"))
	if err := r.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := countryOf(t, r); got != "FR" {
		t.Errorf("after reload: country %q, want FR", got)
	}
	// A reader that still holds the old database keeps working.
	if got := countryOf(t, first); got != "GB" {
		t.Errorf("old database: country %q, want GB", got)
	}

	// Broken replacements are refused and the loaded database stays.
	damaged := cityDB(t, "DE")
	for name, data := range map[string][]byte{
		"garbage":   []byte("definitely not a MaxMind database"),
		"truncated": damaged[:len(damaged)/2],
		"empty":     nil,
	} {
		replace(t, path, data)
		if err := r.Reload(); !errors.Is(err, ErrInvalidDatabase) {
			t.Errorf("%s: Reload err = %v, want ErrInvalidDatabase", name, err)
		}
		if got := countryOf(t, r); got != "FR" {
			t.Errorf("%s: country %q, want FR kept", name, got)
		}
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := r.Reload(); err == nil {
		t.Error("Reload of a removed file succeeded")
	}
	if got := countryOf(t, r); got != "FR" {
		t.Errorf("file removed: country %q, want FR kept", got)
	}
	if !strings.Contains(logs.String(), "keeping the loaded one") {
		t.Errorf("refusals not logged:\n%s", logs.String())
	}
}

// TestReloadSharedBroken feeds MaxMind's damaged test files to a Reloader.
func TestReloadSharedBroken(t *testing.T) {
	path := filepath.Join(t.TempDir(), "city.mmdb")
	replace(t, path, cityDB(t, "GB"))
	r, err := NewReloader(ReloaderConfig{Path: path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"GeoIP2-City-Test-Broken-Double-Format.mmdb", "GeoIP2-City-Test-Invalid-Node-Count.mmdb", "GeoLite2-ASN-Test.mmdb"} {
		data, err := os.ReadFile(sharedData(t, "maxmind-test", f))
		if err != nil {
			t.Fatal(err)
		}
		replace(t, path, data)
		if err := r.Reload(); err == nil {
			t.Errorf("%s accepted", f)
		}
		if got := countryOf(t, r); got != "GB" {
			t.Errorf("%s: country %q, want GB kept", f, got)
		}
	}
}

// TestRunPicksUpChanges lets the poller find a replaced file while readers
// keep looking up.
func TestRunPicksUpChanges(t *testing.T) {
	path := filepath.Join(t.TempDir(), "city.mmdb")
	replace(t, path, cityDB(t, "GB"))
	r, err := NewReloader(ReloaderConfig{Path: path, PollInterval: 5 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := r.Run(ctx); err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if _, err := r.Lookup(testAddr); err != nil {
					t.Errorf("lookup during reload: %v", err)
					return
				}
			}
		}()
	}
	waitCountry := func(want string) {
		t.Helper()
		for i := 0; i < 2000; i++ { // up to ~20 s on a very busy machine
			if countryOf(t, r) == want {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatalf("poller did not pick up %s", want)
	}
	replace(t, path, cityDB(t, "FR"))
	waitCountry("FR")
	replace(t, path, []byte("broken"))
	replace(t, path, cityDB(t, "SE"))
	waitCountry("SE")
}
