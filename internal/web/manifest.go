package web

import (
	"encoding/json"
	"fmt"
)

// manifest is the web app manifest: what "Add to Home Screen" installs.
type manifest struct {
	ID              string         `json:"id"`
	Name            string         `json:"name"`
	ShortName       string         `json:"short_name"`
	Description     string         `json:"description"`
	StartURL        string         `json:"start_url"`
	Scope           string         `json:"scope"`
	Display         string         `json:"display"`
	BackgroundColor string         `json:"background_color"`
	ThemeColor      string         `json:"theme_color"`
	Icons           []manifestIcon `json:"icons"`
}

type manifestIcon struct {
	Src     string `json:"src"`
	Sizes   string `json:"sizes"`
	Type    string `json:"type"`
	Purpose string `json:"purpose"`
}

// ManifestName is the web app manifest's name among the static files:
// pages link it as {{static "manifest.webmanifest"}}, with its digest, so
// browsers keep it (and need not ask for it on every page) until a build
// changes it. Its id keeps the installed app the same app across such
// changes.
const ManifestName = "manifest.webmanifest"

// AddManifest adds the web app manifest to static as ManifestName, naming
// the icons by their versioned URLs, which must be among static's files.
// id, scope and start_url are all "/": the installed app opens the start
// page, which leads a signed-in owner to the diary and anyone else to
// sign-in, and every page of the app stays inside it. Browsers fetch the
// manifest without cookies: it is served like every static file, outside
// the sign-in guard, as application/manifest+json.
func AddManifest(static *Static) error {
	body, err := json.MarshalIndent(manifest{
		ID:              "/",
		Name:            "ndiro meal diary",
		ShortName:       "ndiro",
		Description:     "A private meal photo diary.",
		StartURL:        "/",
		Scope:           "/",
		Display:         "standalone",
		BackgroundColor: "#f6f5f1",
		ThemeColor:      "#2d6a4f",
		Icons: []manifestIcon{
			{Src: static.URL("icon-192.png"), Sizes: "192x192", Type: "image/png", Purpose: "any"},
			{Src: static.URL("icon-512.png"), Sizes: "512x512", Type: "image/png", Purpose: "any"},
			{Src: static.URL("icon-512.png"), Sizes: "512x512", Type: "image/png", Purpose: "maskable"},
		},
	}, "", "  ")
	if err != nil {
		return fmt.Errorf("web: manifest: %w", err)
	}
	static.Add(ManifestName, body)
	return nil
}
