package user

import (
	"errors"
	"fmt"
	"strings"
)

// ReservedPrefix starts every key of the users table that is not a
// person's row: the session keys (Sessions) and the one-writer lease
// (LeaseKey). No provider subject can produce it, because sign-in refuses
// a subject that starts with it (CheckSubject); every Scan of the table
// leaves such items out (lists, counts, the orphan check's users).
const ReservedPrefix = "#"

// LeaseKey is the users table key of the one-writer lease item (package
// lease; deploy/README.md, one writer).
const LeaseKey = ReservedPrefix + "lease"

// MaxSubjectLen is the longest provider subject ndiro takes, in bytes:
// OpenID Connect Core 1.0, section 2, says a "sub" must not exceed 255
// ASCII characters.
const MaxSubjectLen = 255

// ErrSubject is wrapped by CheckSubject's refusals: the provider's
// subject cannot be the key of a users row.
var ErrSubject = errors.New("user: the provider's subject cannot key an account")

// Reserved reports whether key starts with ReservedPrefix: an item of the
// users table that is no person's row.
func Reserved(key string) bool { return strings.HasPrefix(key, ReservedPrefix) }

// CheckSubject returns nil if sub, a provider's "sub" claim, can be a
// users row's key: 1 to MaxSubjectLen bytes, each printable ASCII (0x20
// to 0x7E), not starting with ReservedPrefix. Otherwise it returns an
// error wrapping ErrSubject that says which rule sub breaks, without
// quoting it.
func CheckSubject(sub string) error {
	switch {
	case sub == "":
		return fmt.Errorf("%w: it is empty", ErrSubject)
	case len(sub) > MaxSubjectLen:
		return fmt.Errorf("%w: it is %d bytes long, over %d", ErrSubject, len(sub), MaxSubjectLen)
	case Reserved(sub):
		return fmt.Errorf("%w: it starts with %q, which ndiro keeps for itself", ErrSubject, ReservedPrefix)
	}
	for i := 0; i < len(sub); i++ {
		if c := sub[i]; c < 0x20 || c > 0x7e {
			return fmt.Errorf("%w: byte %d (0x%02x) is not printable ASCII", ErrSubject, i, c)
		}
	}
	return nil
}
