package localenv

import (
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"html/template"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/oauth2-proxy/mockoidc"

	"ndiro/internal/email"
	"ndiro/internal/memnet"
)

// SignInPath is the path under the app's origin where the app serves
// Env.SignIn (the stand-in's issuer is the origin + SignInPath; every
// endpoint of the stand-in lies below it).
const SignInPath = mockoidc.IssuerBase

// startOIDC starts mockoidc, as the issuer origin + SignInPath, on an
// in-memory listener (SignInClient dials it), with a sign-in page in
// front of its authorization endpoint, and sets e.SignIn to the same
// handler for the app to serve to browsers. mockoidc itself has no login
// page: it signs in whichever user is queued. The page asks for an email,
// and the submitted email becomes the queued user, with email_verified
// true and a subject derived from the email alone (stable across
// restarts, as Google's sub is).
//
// The queue holds at most the one user of the request being served: it is
// emptied before the user is queued and again after mockoidc answers, so
// a request mockoidc refuses (a wrong client_id, a bad scope) leaves no
// one behind for the next sign-in to get instead of its own person.
func (e *Env) startOIDC(origin string) error {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return fmt.Errorf("localenv: the sign-in stand-in needs the app's origin, like http://127.0.0.1:8080, not %q", origin)
	}
	m, err := mockoidc.NewServer(nil)
	if err != nil {
		return fmt.Errorf("localenv: oidc: %w", err)
	}
	page := &signInPage{}
	err = m.AddMiddleware(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// mockoidc's session store and user queue are not safe for
			// concurrent use, and queue-then-authorize must not
			// interleave: one request at a time, which is plenty for a
			// local sign-in.
			page.mu.Lock()
			defer page.mu.Unlock()
			if r.URL.Path != mockoidc.AuthorizationEndpoint {
				next.ServeHTTP(w, r)
				return
			}
			if err := r.ParseForm(); err != nil {
				http.Error(w, "bad form", http.StatusBadRequest)
				return
			}
			raw := strings.TrimSpace(r.Form.Get("email"))
			if raw == "" {
				signInForm(w, r, "")
				return
			}
			addr := email.Normalize(raw)
			if !email.Valid(addr) {
				signInForm(w, r, "Type a whole email address, like friend@example.com.")
				return
			}
			var u mockoidc.User = &localUser{
				MockUser: mockoidc.MockUser{
					Subject:       Subject(addr),
					Email:         addr,
					EmailVerified: r.Form.Get("email_verified") != "false",
				},
				Name: strings.TrimSpace(r.Form.Get("name")),
			}
			if page.next != nil {
				u, page.next = page.next, nil
			}
			clearQueue(m.UserQueue)
			defer clearQueue(m.UserQueue)
			m.QueueUser(u)
			next.ServeHTTP(w, r)
		})
	})
	if err != nil {
		return fmt.Errorf("localenv: oidc: %w", err)
	}
	// mockoidc names its issuer after its listener's address and scheme
	// (https when given a TLS config, which a plain Serve on this
	// listener never uses): so the name is the origin's host.
	ln := memnet.Listen(u.Host)
	var https *tls.Config
	if u.Scheme == "https" {
		https = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	if err := m.Start(ln, https); err != nil {
		return fmt.Errorf("localenv: oidc: %w", err)
	}
	e.OIDC, e.signIn, e.signInLn = m, page, ln
	e.SignIn = loopbackOnly(m.Server.Handler)
	return nil
}

// SignInClient returns the client the app's sign-in talks to the
// stand-in with (discovery, keys, token exchange, userinfo): it reaches
// the stand-in inside the process, whatever the issuer URL's host, with
// a 10 s timeout and idle connections closed after IdleConnTimeout.
// Nil without Options.SignInOrigin.
func (e *Env) SignInClient() *http.Client {
	if e.signInLn == nil {
		return nil
	}
	tr := &http.Transport{DialContext: e.signInLn.DialContext, IdleConnTimeout: IdleConnTimeout, MaxIdleConnsPerHost: 4}
	return &http.Client{Timeout: 10 * time.Second, Transport: tr}
}

// forwardingHeaders are what a reverse proxy adds to a request it passes
// on: a request carrying one came to the proxy from somewhere else.
var forwardingHeaders = []string{"Forwarded", "X-Forwarded-For", "X-Real-Ip"}

// loopbackOnly refuses, with 403, every request that does not come from
// this machine's loopback, or that a proxy passed on (forwardingHeaders):
// the stand-in signs in whoever types an email, so it must never answer
// another device, even through a proxy in front of the app.
func loopbackOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		forwarded := false
		for _, h := range forwardingHeaders {
			forwarded = forwarded || len(r.Header.Values(h)) > 0
		}
		if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() || forwarded {
			http.Error(w, "The local sign-in answers this machine only, not requests a proxy passes on. To sign in from other devices, run ndiro in server mode with a real sign-in provider (README, On one machine without AWS).", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// signInPage is the state of the sign-in page in front of mockoidc.
type signInPage struct {
	mu sync.Mutex
	// next, if set, is who the next submitted sign-in signs in, instead
	// of the email typed (NextSignIn).
	next mockoidc.User
}

// NextSignIn makes the next sign-in submitted at the stand-in's page sign
// in u, whatever email is typed, once: for tests of accounts the page
// cannot describe, such as a provider that sends the email only from its
// userinfo endpoint.
func (e *Env) NextSignIn(u mockoidc.User) {
	e.signIn.mu.Lock()
	defer e.signIn.mu.Unlock()
	e.signIn.next = u
}

// clearQueue empties mockoidc's queue of users to sign in.
func clearQueue(q *mockoidc.UserQueue) {
	q.Lock()
	defer q.Unlock()
	q.Queue = nil
}

// localUser is a mockoidc user that also carries the standard name claim
// (mockoidc's MockUser has none), released with the profile scope as
// Google does.
type localUser struct {
	mockoidc.MockUser
	Name string
}

// localClaims are the ID token claims of a localUser.
type localClaims struct {
	*mockoidc.IDTokenClaims
	Email         string `json:"email,omitempty"`
	EmailVerified bool   `json:"email_verified,omitempty"`
	Name          string `json:"name,omitempty"`
}

// Claims returns the ID token claims for scope: email with "email", name
// with "profile".
func (u *localUser) Claims(scope []string, base *mockoidc.IDTokenClaims) (jwt.Claims, error) {
	c := &localClaims{IDTokenClaims: base}
	for _, s := range scope {
		switch s {
		case "email":
			c.Email, c.EmailVerified = u.Email, u.EmailVerified
		case "profile":
			c.Name = u.Name
		}
	}
	return c, nil
}

// Subject is the OIDC subject the local sign-in gives email: the same email
// always gets the same subject, so a users row survives restarts.
func Subject(email string) string {
	sum := sha256.Sum256([]byte("ndiro-local-sub:" + strings.ToLower(email)))
	return "local-" + hex.EncodeToString(sum[:10])
}

type signInData struct {
	Hidden  []hiddenField
	Message string
	Email   string
	Name    string
}

type hiddenField struct{ Name, Value string }

// signInForm renders the local stand-in for Google's account chooser. It
// carries every authorization parameter through as hidden fields.
func signInForm(w http.ResponseWriter, r *http.Request, msg string) {
	d := signInData{Message: msg, Email: r.Form.Get("email"), Name: r.Form.Get("name")}
	for name, vals := range r.Form {
		if name == "email" || name == "name" || len(vals) == 0 {
			continue
		}
		d.Hidden = append(d.Hidden, hiddenField{name, vals[0]})
	}
	sort.Slice(d.Hidden, func(i, j int) bool { return d.Hidden[i].Name < d.Hidden[j].Name })
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Security-Policy", signInCSP)
	if msg != "" {
		w.WriteHeader(http.StatusUnprocessableEntity)
	}
	if err := signInTmpl.Execute(w, d); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

// signInStyle is the sign-in page's one style sheet, inline.
const signInStyle = `
body{font:16px/1.5 system-ui,sans-serif;max-width:26rem;margin:3rem auto;padding:0 1rem;color:#222}
input,button{font:inherit;padding:.6rem;width:100%;box-sizing:border-box;margin:.3rem 0}
button{background:#2d6a4f;color:#fff;border:0;border-radius:.4rem}
.note{color:#555;font-size:.9rem}.err{color:#a00}
`

// signInCSP is the sign-in page's Content-Security-Policy, in place of
// the app's (which it is served under): nothing but its own style sheet,
// named by digest, and its form sent to itself.
var signInCSP = func() string {
	sum := sha256.Sum256([]byte(signInStyle))
	return "default-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) +
		"'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
}()

var signInTmpl = template.Must(template.New("signin").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Local sign-in · ndiro</title>
<style>` + signInStyle + `</style></head><body>
<h1>Local sign-in</h1>
<p class="note">This page stands in for Google in local mode. Any email works;
the same email is always the same person. Admins (ADMIN_EMAILS, by default
admin@example.com) need no invite.</p>
<form method="get" action="">
{{range .Hidden}}<input type="hidden" name="{{.Name}}" value="{{.Value}}">
{{end}}<label for="email">Sign in as</label>
<input id="email" name="email" type="email" required autofocus autocomplete="email" value="{{.Email}}" placeholder="admin@example.com">
{{with .Message}}<p class="err" role="alert">{{.}}</p>{{end}}
<label for="name">Name <span class="note">(optional; Google sends the account's name)</span></label>
<input id="name" name="name" type="text" autocomplete="name" value="{{.Name}}">
<button type="submit">Continue</button>
</form>
</body></html>
`))
