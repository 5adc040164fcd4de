// Package static embeds the stylesheet, scripts and icons served under
// /static/.
package static

import "embed"

// FS holds the static files, served with a content hash in their URL.
//
//go:embed *.css *.js *.svg *.png
var FS embed.FS
