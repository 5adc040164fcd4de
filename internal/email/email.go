// Package email checks email addresses, one rule for every place ndiro
// takes one: ADMIN_EMAILS, invite restrictions, the local sign-in page. It
// knows no concept.
package email

import (
	"net"
	"net/mail"
	"strings"
)

// Normalize returns s trimmed and lower-cased, the form ndiro stores and
// compares emails in (OIDC providers may vary the case; people do).
func Normalize(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// Valid reports whether s is a plain, lower-case address that can receive
// mail: "name@example.org", at most 254 characters, a local part of at most
// 64 (RFC 5321 limits), no quoting, comments, display name or spaces, and a
// domain name with a dot. IP-literal domains ("x@[127.0.0.1]") and bare IP
// addresses ("x@127.0.0.1") are refused: no provider verifies them.
func Valid(s string) bool {
	if s == "" || len(s) > 254 || s != strings.ToLower(s) || strings.ContainsAny(s, "\"()<>[]\\,; \t\r\n") {
		return false
	}
	a, err := mail.ParseAddress(s)
	if err != nil || a.Address != s || a.Name != "" {
		return false
	}
	local, domain, _ := strings.Cut(s, "@")
	if local == "" || len(local) > 64 || !strings.Contains(domain, ".") ||
		strings.HasPrefix(domain, ".") || strings.HasSuffix(domain, ".") || strings.Contains(domain, "..") {
		return false
	}
	return net.ParseIP(domain) == nil
}
