package auth

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"
)

// Sign-in attempts (DESIGN.md, sign-in): what one sign-in needs from
// GET /login to /auth/callback lives in the browser, in an encrypted
// cookie of its own, never on the server, so any number of /login
// requests costs no memory.
const (
	// AttemptLifetime is how long a sign-in may take from GET /login to
	// the callback. The server checks it against the time sealed inside
	// the cookie; the cookie's Max-Age only tidies the browser.
	AttemptLifetime = 10 * time.Minute
	// MaxAttempts is how many sign-ins one browser may have under way at
	// once (tabs); starting one more drops the oldest.
	MaxAttempts = 3
	// attemptPrefix starts the name of every attempt cookie; the rest is
	// attemptName's digest of the attempt's state.
	attemptPrefix = "ndiro_signin_"
	// maxNextInAttempt bounds the return path kept in a cookie, in bytes,
	// so a few attempts fit any proxy's header limits; a longer one is
	// dropped and sign-in lands on the diary.
	maxNextInAttempt = 1024
)

// Errors of attempts.take.
var (
	// errNoAttempt: no readable cookie for this state in this browser
	// (never started here, already used, dropped, or sealed by an
	// earlier run of the process).
	errNoAttempt = errors.New("no sign-in attempt for this state")
	// errAttemptExpired: the attempt is older than AttemptLifetime.
	errAttemptExpired = errors.New("sign-in attempt expired")
)

// attempt is one sign-in under way.
type attempt struct {
	State    string
	Nonce    string
	Verifier string
	// Next is the local path to land on afterwards ("" for the diary).
	Next string
	// Invite is the token of the invite being used, if any.
	Invite string
	// Created is when GET /login began it, in Unix seconds.
	Created int64
}

// encode writes a compactly, for sealing: the creation time as 8 bytes,
// then each string with its length before it (a uvarint).
func (a attempt) encode() []byte {
	b := binary.BigEndian.AppendUint64(make([]byte, 0, 8+5+len(a.State)+len(a.Nonce)+len(a.Verifier)+len(a.Next)+len(a.Invite)+8), uint64(a.Created))
	for _, f := range []string{a.State, a.Nonce, a.Verifier, a.Next, a.Invite} {
		b = binary.AppendUvarint(b, uint64(len(f)))
		b = append(b, f...)
	}
	return b
}

// decodeAttempt reads what encode wrote; ok is false if b is not that.
func decodeAttempt(b []byte) (a attempt, ok bool) {
	if len(b) < 8 {
		return attempt{}, false
	}
	a.Created, b = int64(binary.BigEndian.Uint64(b)), b[8:]
	for _, f := range []*string{&a.State, &a.Nonce, &a.Verifier, &a.Next, &a.Invite} {
		n, k := binary.Uvarint(b)
		// Only encode's own (shortest) lengths: one attempt, one form.
		if k <= 0 || n > uint64(len(b)-k) || k != len(binary.AppendUvarint(nil, n)) {
			return attempt{}, false
		}
		*f, b = string(b[k:k+int(n)]), b[k+int(n):]
	}
	return a, len(b) == 0
}

// attempts seals sign-in attempts into cookies and opens them again. The
// key is made at start and lives only in this process (there is exactly
// one): a restart makes attempts under way start again.
type attempts struct {
	aead   cipher.AEAD
	secure bool
	now    func() time.Time
}

// newAttempts returns attempts sealed with a fresh random AES-256-GCM
// key. secure marks the cookies Secure (every mode but local).
func newAttempts(secure bool, now func() time.Time) (*attempts, error) {
	key := make([]byte, 32)
	rand.Read(key)
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("auth: attempt cipher: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("auth: attempt cipher: %w", err)
	}
	return &attempts{aead: aead, secure: secure, now: now}, nil
}

// attemptName is the cookie name of the attempt with state: the prefix
// and the first 16 hex digits of the state's SHA-256, so each attempt
// (each tab) has a cookie of its own and the name reveals nothing.
func attemptName(state string) string {
	sum := sha256.Sum256([]byte(state))
	return attemptPrefix + hex.EncodeToString(sum[:8])
}

// seal encrypts a into a cookie value bound to the cookie name (as
// additional data, so a value cannot move to another name).
func (s *attempts) seal(name string, a attempt) string {
	plain := a.encode()
	nonce := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(plain)+s.aead.Overhead())
	rand.Read(nonce)
	return base64.RawURLEncoding.EncodeToString(s.aead.Seal(nonce, nonce, plain, []byte(name)))
}

// open decrypts the cookie value v of the cookie name; ok is false for
// anything not sealed by this process under that name.
func (s *attempts) open(name, v string) (a attempt, ok bool) {
	b, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil || len(b) < s.aead.NonceSize()+s.aead.Overhead() {
		return attempt{}, false
	}
	n := s.aead.NonceSize()
	plain, err := s.aead.Open(nil, b[:n], b[n:], []byte(name))
	if err != nil {
		return attempt{}, false
	}
	return decodeAttempt(plain)
}

// cookie is an attempt cookie named name with value v; maxAge as
// http.Cookie's (-1 deletes it).
func (s *attempts) cookie(name, v string, maxAge int) *http.Cookie {
	return &http.Cookie{
		Name:     name,
		Value:    v,
		Path:     "/",
		MaxAge:   maxAge,
		HttpOnly: true,
		Secure:   s.secure,
		// Lax: the provider's redirect back is a top-level GET from
		// another site, which must carry the cookie.
		SameSite: http.SameSiteLaxMode,
	}
}

// start begins an attempt with fresh secrets, landing on next and using
// the invite inv afterwards, and writes its cookie to w. Of the attempt
// cookies r carries, those this process cannot open or that have
// expired are deleted, and the oldest are deleted so that at most
// MaxAttempts remain with the new one.
func (s *attempts) start(w http.ResponseWriter, r *http.Request, a attempt) {
	a.Created = s.now().Unix()
	if len(a.Next) > maxNextInAttempt {
		a.Next = ""
	}
	type held struct {
		name    string
		created int64
	}
	var live []held
	for _, c := range r.Cookies() {
		if !strings.HasPrefix(c.Name, attemptPrefix) {
			continue
		}
		old, ok := s.open(c.Name, c.Value)
		if !ok || s.expired(old) {
			http.SetCookie(w, s.cookie(c.Name, "", -1))
			continue
		}
		live = append(live, held{c.Name, old.Created})
	}
	sort.Slice(live, func(i, j int) bool { return live[i].created < live[j].created })
	for len(live) >= MaxAttempts {
		http.SetCookie(w, s.cookie(live[0].name, "", -1))
		live = live[1:]
	}
	name := attemptName(a.State)
	http.SetCookie(w, s.cookie(name, s.seal(name, a), int(AttemptLifetime/time.Second)))
}

// take returns the attempt whose state is state and deletes its cookie:
// an attempt is used once, whatever the callback's outcome. It returns
// errNoAttempt if r carries none this process can open, and the attempt
// with errAttemptExpired if it is older than AttemptLifetime.
func (s *attempts) take(w http.ResponseWriter, r *http.Request, state string) (attempt, error) {
	if state == "" {
		return attempt{}, errNoAttempt
	}
	name := attemptName(state)
	c, err := r.Cookie(name)
	if err != nil {
		return attempt{}, errNoAttempt
	}
	http.SetCookie(w, s.cookie(name, "", -1))
	a, ok := s.open(name, c.Value)
	if !ok || a.State != state {
		return attempt{}, errNoAttempt
	}
	if s.expired(a) {
		return a, errAttemptExpired
	}
	return a, nil
}

// expired reports whether a began more than AttemptLifetime ago.
func (s *attempts) expired(a attempt) bool {
	return s.now().Sub(time.Unix(a.Created, 0)) > AttemptLifetime
}
