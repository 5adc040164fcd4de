// Package token makes and checks the random tokens that name invites and
// share links in URLs.
package token

import (
	"crypto/rand"
	"encoding/base64"
)

// Len is the length of a token in characters: 32 random bytes (256 bits,
// above DESIGN.md's floor of 128) in unpadded base64url.
const Len = 43

// New returns a fresh random token of Len URL-safe characters.
func New() string {
	b := make([]byte, 32)
	rand.Read(b) // never returns an error (crypto/rand, Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Valid reports whether s has the shape of a token from New, so that
// malformed tokens are refused before any table is read.
func Valid(s string) bool {
	if len(s) != Len {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
