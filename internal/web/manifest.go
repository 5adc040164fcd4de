package web

import (
	"encoding/json"
	"net/http"
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

// Manifest returns the handler of /manifest.webmanifest, the web app
// manifest, with static's versioned icon URLs. id, scope and start_url are
// all "/": the installed app opens the start page, which leads a signed-in
// owner to the diary and anyone else to sign-in, and every page of the app
// stays inside it. Browsers fetch the manifest without cookies, so it is
// served outside the sign-in guard, as application/manifest+json; it is
// revalidated on use (no-cache), so a new build's icons reach installed
// apps.
func Manifest(static *Static) http.HandlerFunc {
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
		panic(err) // constant data: fails at start-up in every test
	}
	return func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "application/manifest+json")
		h.Set("Cache-Control", "no-cache")
		w.Write(body)
	}
}
