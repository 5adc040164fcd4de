// Package templates embeds the HTML templates, so the binary is
// self-contained. Pages are named by path without ".html".
package templates

import "embed"

// FS holds base.html, partials/*.html and every <concept>/<page>.html.
//
//go:embed *.html */*.html
var FS embed.FS
