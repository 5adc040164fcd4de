package user

import (
	"context"
	"strings"
)

// Device is what the account page says of the browser a session signed
// in from: the browser's and the platform's names, each one of a few
// fixed names or "" for one not recognised. Only these two names are
// kept with a session, never the User-Agent itself, nor any address.
type Device struct {
	Browser  string `dynamodbav:"browser,omitempty"`  // e.g. "Firefox", "Safari"
	Platform string `dynamodbav:"platform,omitempty"` // e.g. "iPhone", "Windows"
}

// String names d for a list of devices: "Firefox on Windows", "Safari",
// "A browser on Android", "Unknown browser".
func (d Device) String() string {
	switch {
	case d.Browser != "" && d.Platform != "":
		return d.Browser + " on " + d.Platform
	case d.Browser != "":
		return d.Browser
	case d.Platform != "":
		return "A browser on " + d.Platform
	}
	return "Unknown browser"
}

// A rule names what a User-Agent holding any of its tokens runs.
type uaRule struct {
	name   string
	tokens []string
}

// browsers are tried in order: a User-Agent names several (every Chrome
// says "Safari", Edge and Opera say "Chrome"), so the most particular
// comes first.
var browsers = []uaRule{
	{"Edge", []string{"Edg/", "EdgA/", "EdgiOS/", "Edge/"}},
	{"Opera", []string{"OPR/", "OPiOS/", "Opera"}},
	{"Samsung Internet", []string{"SamsungBrowser/"}},
	{"Vivaldi", []string{"Vivaldi/"}},
	{"Yandex Browser", []string{"YaBrowser/"}},
	{"Firefox", []string{"Firefox/", "FxiOS/"}},
	{"Chrome", []string{"CriOS/"}},
	{"Chromium", []string{"Chromium/"}},
	{"Chrome", []string{"Chrome/"}},
	{"Internet Explorer", []string{"MSIE ", "Trident/"}},
	{"Safari", []string{"Safari/"}},
}

// platforms are tried in order: Android says "Linux", iPadOS and iOS say
// "like Mac OS X".
var platforms = []uaRule{
	{"iPad", []string{"iPad"}},
	{"iPhone", []string{"iPhone", "iPod"}},
	{"Android", []string{"Android"}},
	{"ChromeOS", []string{"CrOS"}},
	{"Windows", []string{"Windows"}},
	{"macOS", []string{"Macintosh", "Mac OS X"}},
	{"FreeBSD", []string{"FreeBSD"}},
	{"OpenBSD", []string{"OpenBSD"}},
	{"Linux", []string{"Linux", "X11"}},
}

// maxUserAgent bounds how much of a User-Agent ParseDevice reads: every
// token it looks for comes well within it.
const maxUserAgent = 512

// ParseDevice names the browser and platform of the User-Agent header
// ua, coarsely: the first rule of each list whose token ua holds, "" if
// none does. iPadOS in its desktop mode says it is a Mac, and is named
// macOS; an app's web view on iOS (no "Safari/") is named by its
// platform only.
func ParseDevice(ua string) Device {
	if len(ua) > maxUserAgent {
		ua = ua[:maxUserAgent]
	}
	return Device{Browser: firstMatch(browsers, ua), Platform: firstMatch(platforms, ua)}
}

func firstMatch(rules []uaRule, ua string) string {
	for _, r := range rules {
		for _, tok := range r.tokens {
			if strings.Contains(ua, tok) {
				return r.name
			}
		}
	}
	return ""
}

type signInKey struct{}

// SignIn returns ctx marking the session commit made under it as a
// sign-in from device d: only such a commit starts a session
// (Sessions.CommitCtx), so a session ended while a request was under way
// is never started again by that request's commit.
func SignIn(ctx context.Context, d Device) context.Context {
	return context.WithValue(ctx, signInKey{}, d)
}

// signingIn returns the device of a sign-in's ctx (SignIn), ok false for
// any other commit.
func signingIn(ctx context.Context) (d Device, ok bool) {
	d, ok = ctx.Value(signInKey{}).(Device)
	return d, ok
}
