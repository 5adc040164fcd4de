package auth

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"ndiro/internal/user"
)

// SessionCodec encodes session data for the session store: sessions hold
// only strings (the user ID while signed in; a sign-in under way keeps
// its state in an attempt cookie, not here), so they are written as
// length-prefixed strings
// instead of scs's default gob, whose decoder compiles its types anew on
// every request (about 20 µs, more than serving a cached thumbnail).
//
// Layout: 'n', the deadline as Unix nanoseconds (8 bytes, big-endian),
// then per value a key and a string, each a uvarint length and its bytes.
// Encode refuses any value that is not a string.
type SessionCodec struct{}

// sessionMagic starts every encoded session: a store holding another
// encoding fails to decode instead of reading garbage.
const sessionMagic = 'n'

// errSessionData is the decode error of data SessionCodec did not write.
var errSessionData = errors.New("auth: session data is not in the session codec's layout")

// Encode writes deadline and values; every value must be a string.
func (SessionCodec) Encode(deadline time.Time, values map[string]any) ([]byte, error) {
	b := make([]byte, 0, 16+32*len(values))
	b = append(b, sessionMagic)
	b = binary.BigEndian.AppendUint64(b, uint64(deadline.UnixNano()))
	for k, v := range values {
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("auth: session value %q is a %T, want a string", k, v)
		}
		b = binary.AppendUvarint(b, uint64(len(k)))
		b = append(b, k...)
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return b, nil
}

// Decode reads what Encode wrote.
func (SessionCodec) Decode(b []byte) (time.Time, map[string]any, error) {
	deadline, err := sessionDeadline(b)
	if err != nil {
		return time.Time{}, nil, err
	}
	values := map[string]any{}
	err = eachSessionValue(b, func(k, v []byte) bool {
		values[string(k)] = string(v)
		return true
	})
	if err != nil {
		return time.Time{}, nil, err
	}
	return deadline, values, nil
}

func sessionDeadline(b []byte) (time.Time, error) {
	if len(b) < 9 || b[0] != sessionMagic {
		return time.Time{}, errSessionData
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(b[1:9]))), nil
}

// eachSessionValue calls fn with each key and value of encoded session b
// until fn returns false.
func eachSessionValue(b []byte, fn func(k, v []byte) bool) error {
	if len(b) < 9 || b[0] != sessionMagic {
		return errSessionData
	}
	b = b[9:]
	next := func() ([]byte, bool) {
		n, w := binary.Uvarint(b)
		if w <= 0 || uint64(len(b)-w) < n {
			return nil, false
		}
		s := b[w : w+int(n)]
		b = b[w+int(n):]
		return s, true
	}
	for len(b) > 0 {
		k, ok1 := next()
		v, ok2 := next()
		if !ok1 || !ok2 {
			return errSessionData
		}
		if !fn(k, v) {
			return nil
		}
	}
	return nil
}

// sessionUserID returns the signed-in user ID held in encoded session b,
// "" if none, without building the values map.
func sessionUserID(b []byte) string {
	var id string
	eachSessionValue(b, func(k, v []byte) bool {
		if string(k) == keyUserID {
			id = string(v)
			return false
		}
		return true
	})
	return id
}

// PhotoOwner is the guard of the owner's photo route, RequireUser for a
// request a month page makes up to 90 times: it returns the signed-in
// user's ID, or answers the request itself (sign-in redirect, error page)
// and returns ok false. It looks the session cookie's token up in the
// session store and reads the user ID from the stored bytes, without
// loading the session into the session manager or the request's context
// (each costs more than serving a cached photo), then checks the users row
// (the users store's cache; a GetItem on a miss). No session redirects to
// sign-in; a missing, deleting or disabled row deletes the session from
// the store first. It never writes the session, so no response carries
// Set-Cookie and photos stay cacheable. The session manager must not hash
// tokens in its store (Build leaves HashTokenInStore off).
func (h *Handler) PhotoOwner(w http.ResponseWriter, r *http.Request) (id string, ok bool) {
	tok := cookieValue(r, h.sessions.Cookie.Name)
	if tok != "" {
		b, found, err := h.sessions.Store.Find(tok)
		if err != nil {
			h.pages.Error(w, r, fmt.Errorf("auth: session store: %w", err))
			return "", false
		}
		if found {
			id = sessionUserID(b)
		}
	}
	if id == "" {
		h.toLogin(w, r)
		return "", false
	}
	active, err := h.users.Active(r.Context(), id)
	if errors.Is(err, user.ErrNotFound) || err == nil && !active {
		if derr := h.sessions.Store.Delete(tok); derr != nil {
			h.pages.Error(w, r, fmt.Errorf("auth: session store: %w", derr))
			return "", false
		}
		h.toLogin(w, r)
		return "", false
	}
	if err != nil {
		h.pages.Error(w, r, err)
		return "", false
	}
	return id, true
}

// cookieValue returns the value of the first cookie called name in r's
// Cookie headers, "" if none, as r.Cookie would but without parsing every
// cookie into a struct. Quotes around the value are removed.
func cookieValue(r *http.Request, name string) string {
	for _, line := range r.Header["Cookie"] {
		for line != "" {
			var part string
			part, line, _ = strings.Cut(line, ";")
			part = strings.TrimSpace(part)
			k, v, ok := strings.Cut(part, "=")
			if !ok || k != name {
				continue
			}
			if len(v) > 1 && v[0] == '"' && v[len(v)-1] == '"' {
				v = v[1 : len(v)-1]
			}
			return v
		}
	}
	return ""
}
