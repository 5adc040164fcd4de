package server_test

import (
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"net/http"
	"strings"
	"testing"

	"ndiro/internal/apptest"
)

// TestManifest: the web app manifest is served without a session, as
// application/manifest+json, linked from every page with a touch icon,
// and its icons are the PNGs it names.
func TestManifest(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	req, _ := http.NewRequest(http.MethodGet, app.URL+"/manifest.webmanifest", nil)
	resp, err := http.DefaultTransport.RoundTrip(req) // no cookie jar, no redirects
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/manifest+json" || resp.Header.Get("Set-Cookie") != "" {
		t.Fatalf("manifest = %d %q Set-Cookie %q, want 200 application/manifest+json and no cookie", resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Set-Cookie"))
	}
	var m struct {
		ID, Name, ShortName, StartURL, Scope, Display, ThemeColor, BackgroundColor string
		Icons                                                                      []struct{ Src, Sizes, Type, Purpose string }
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	fixed := string(body)
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		t.Fatal(err)
	}
	for k, dst := range map[string]any{"id": &m.ID, "name": &m.Name, "short_name": &m.ShortName, "start_url": &m.StartURL, "scope": &m.Scope,
		"display": &m.Display, "theme_color": &m.ThemeColor, "background_color": &m.BackgroundColor, "icons": &m.Icons} {
		if err := json.Unmarshal(raw[k], dst); err != nil {
			t.Errorf("manifest %s: %v", k, err)
		}
	}
	if m.ID != "/" || m.StartURL != "/" || m.Scope != "/" || m.Display != "standalone" || m.ShortName != "ndiro" || m.Name == "" || m.ThemeColor != "#2d6a4f" || m.BackgroundColor == "" {
		t.Errorf("manifest = %+v", m)
	}
	sizes := map[string]bool{}
	anon := app.Client()
	for _, ic := range m.Icons {
		r := anon.Get(ic.Src)
		cfg, err := png.DecodeConfig(strings.NewReader(r.Body))
		if r.StatusCode != http.StatusOK || r.Header.Get("Content-Type") != "image/png" || err != nil || ic.Type != "image/png" {
			t.Errorf("icon %s = %d %q (%v)", ic.Src, r.StatusCode, r.Header.Get("Content-Type"), err)
			continue
		}
		if got := fmt.Sprintf("%dx%d", cfg.Width, cfg.Height); got != ic.Sizes {
			t.Errorf("icon %s is %s, manifest says %s", ic.Src, got, ic.Sizes)
		}
		sizes[ic.Sizes+" "+ic.Purpose] = true
	}
	for _, want := range []string{"192x192 any", "512x512 any", "512x512 maskable"} {
		if !sizes[want] {
			t.Errorf("manifest has no %s icon: %+v", want, m.Icons)
		}
	}
	// Every page links it by its versioned address, which browsers keep
	// for a year (a new build links a new version), with a touch icon for
	// iOS.
	for _, path := range []string{"/", "/no-such-page"} {
		doc := anon.Get(path).Doc()
		v, _ := doc.Find(`head link[rel=manifest]`).Attr("href")
		linked := anon.Get(v)
		if !strings.HasPrefix(v, "/static/manifest.webmanifest?v=") || linked.StatusCode != http.StatusOK ||
			linked.Header.Get("Content-Type") != "application/manifest+json" ||
			linked.Header.Get("Cache-Control") != "public, max-age=31536000, immutable" {
			t.Errorf("%s links the manifest as %q: %d %q %q", path, v, linked.StatusCode, linked.Header.Get("Content-Type"), linked.Header.Get("Cache-Control"))
		}
		if linked.Body != fixed {
			t.Errorf("%s links a manifest other than /manifest.webmanifest's", path)
		}
		touch, _ := doc.Find(`head link[rel=apple-touch-icon]`).Attr("href")
		r := anon.Get(touch)
		if cfg, err := png.DecodeConfig(strings.NewReader(r.Body)); err != nil || cfg.Width != 180 {
			t.Errorf("%s: apple-touch-icon %q is not a 180 px PNG (%v)", path, touch, err)
		}
	}
}
