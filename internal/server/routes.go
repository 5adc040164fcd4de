// Package server wires every route to its handler and guard. Reading this
// file tells which URLs exist, who may open them, and in which order the
// middleware runs.
package server

import (
	"fmt"
	"log/slog"
	"net/http"

	"github.com/alexedwards/scs/v2"
	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"ndiro/internal/account"
	"ndiro/internal/admin"
	"ndiro/internal/auth"
	"ndiro/internal/invite"
	"ndiro/internal/localenv"
	"ndiro/internal/meal"
	"ndiro/internal/metrics"
	"ndiro/internal/share"
	"ndiro/internal/user"
	"ndiro/internal/web"
)

// Deps are the handlers and plumbing New wires together.
type Deps struct {
	Log      *slog.Logger
	Pages    *web.Pages
	Static   *web.Static
	Sessions *scs.SessionManager
	Auth     *auth.Handler
	Invites  *invite.Handler
	Meals    *meal.Handler
	Shares   *share.Handler
	Admin    *admin.Handler
	Account  *account.Handler
	// HSTS adds Strict-Transport-Security (HTTPS deployments only).
	HSTS bool
	// WriteHealth, if set, reports whether storage takes writes
	// (Backends.WriteHealth); while it returns an error, unsafe requests
	// of signed-in users are refused before their form is read.
	WriteHealth func() error
	// Quota bounds each account: a new meal or an import for an account
	// at a bound is refused before its body is read (refuseFull).
	Quota user.Quota
	// Ready answers /readyz (readiness.Checker).
	Ready http.Handler
	// Metrics, if set, counts every request by route pattern
	// (ndiro_http_requests_total, ndiro_http_request_duration_seconds).
	Metrics *metrics.Metrics
	// SignIn, if set, answers every GET under localenv.SignInPath: local
	// mode's stand-in sign-in (Backends.SignIn).
	SignIn http.Handler
}

// ServiceWorkerPath is where the service worker (static/sw.js) is served
// and registered from (static/outbox.js).
const ServiceWorkerPath = "/sw.js"

// serviceWorker serves static/sw.js with Service-Worker-Allowed: / (its
// scope, the whole app, already follows from its path; the header says
// so to a browser that registers it with scope "/" explicitly).
func serviceWorker(st *web.Static) http.HandlerFunc {
	file := st.File("sw.js")
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Service-Worker-Allowed", "/")
		file(w, r)
	}
}

// The photo routes' patterns, as logs show them.
const (
	ownerPhotoRoute     = "/photo/{date}/{meal_id}"
	recipientPhotoRoute = "/s/{token}/photo/{date}/{meal_id}"
)

// Handler is the application's HTTP handler (New): the security headers
// (web.SecurityHeaders) on every response, then two route tables. Mux,
// an http.ServeMux, is the outer one: it holds the owner's photo route
// ("GET /photo/{date}/{meal_id}") with a stack of its own, and sends
// every other request ("/") to Pages, the chi router of every other
// route (chi.Walk lists them).
type Handler struct {
	Mux   *http.ServeMux
	Pages *chi.Mux
	serve http.Handler
}

// ServeHTTP sets the security headers and routes r through Mux.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.serve.ServeHTTP(w, r) }

// New returns the application's HTTP handler: security headers on every
// response, then the route tables (Handler).
//
// The owner's photo route, which a month page asks up to 90 times, is
// an http.ServeMux pattern rather than a chi route because chi costs a
// cached photo as much as the rest of its route together (a copy of the
// request for its routing context, a map for its path values: 4
// allocations and ~700 B a request; BenchmarkOwnerPhoto's x-bare at 0.30
// for a 304 against 0.50 without it). Its stack runs only what a cached
// photo needs (profile BenchmarkOwnerPhoto before adding to it): panic
// recovery → the handler's errors logged, its successes not
// (web.Pages.HandleQuiet) → the guard (auth.Handler.UserFromStore:
// RequireUser's rule, reading the session straight from its store, so no
// session is loaded or saved and no cookie set, and handing the user ID
// to the handler rather than through a context, which would copy the
// request) → the handler, which reads date and meal ID as the pattern's
// path values. No request ID, no access-log wrapper, no CSRF check (a
// GET; HEAD is answered by the GET pattern without a body), no gzip
// (JPEG). Any other method on that path is a 405 page, logged the same way.
// Outermost in both tables, each request is counted by route pattern,
// method and status class (metrics.Requests; on the photo route a fixed
// label, two clock reads and two atomic adds, no allocation).
//
// Every other route is in Pages with the full stack: HEAD answered by
// the GET route without a body → request id → access log (route pattern
// only) → panic recovery → cross-origin protection for unsafe methods
// (CSRF) → gzip → session load/save → guards → the refusal of unsafe
// requests while storage takes no writes (a full disk in local mode: 507,
// before the body is read) → on the routes that add meals (the meal form,
// the import), the refusal of an account at its quota (403, before the
// body is read: refuseFull) → the form limit of the route (every POST
// route has one: form, or upload for the meal form with its photo; a
// body over it is a 413, too many fields a 400, before the handler
// runs; the import of an export zip alone reads its body itself, within
// limits of its own). Static files, /healthz, /readyz and local mode's
// stand-in sign-in (localenv.SignInPath) sit before sessions and never
// set a cookie. Share recipients' routes (/s/…) never touch the
// session at all: a recipient has no account, and a signed-in owner or
// admin opening a link is treated exactly like anyone else.
func New(d Deps) (*Handler, error) {
	var requests *metrics.Requests
	if d.Metrics != nil {
		requests = d.Metrics.Requests()
	}
	p := pages(d, requests)
	photo := d.Pages.Recover(d.Pages.HandleQuiet(d.Auth.UserFromStore(d.Meals.Photo)))
	other := d.Pages.Recover(d.Pages.HandleQuiet(getOnly))
	if requests != nil {
		if err := requests.Routes(p); err != nil {
			return nil, fmt.Errorf("server: route patterns for the metrics: %w", err)
		}
		photo, other = requests.Route(ownerPhotoRoute)(photo), requests.Route(ownerPhotoRoute)(other)
	}
	mux := http.NewServeMux()
	mux.Handle("GET "+ownerPhotoRoute, photo)
	mux.Handle(ownerPhotoRoute, other)
	mux.Handle("/", p)
	return &Handler{Mux: mux, Pages: p, serve: web.SecurityHeaders(d.HSTS)(mux)}, nil
}

// getOnly refuses a request with a method its route does not take, for
// a route whose GET (and so HEAD) is its only method.
func getOnly(w http.ResponseWriter, _ *http.Request) error {
	w.Header().Set("Allow", "GET, HEAD")
	return &web.Error{Status: http.StatusMethodNotAllowed, Msg: "This page does not accept that kind of request."}
}

// pages is the router of every route but the owner's photos, with the
// full middleware stack (New), its requests counted by requests (nil:
// not counted).
func pages(d Deps, requests *metrics.Requests) *chi.Mux {
	form := d.Pages.Form(web.FormLimits{MaxBytes: web.MaxFormBytes, MaxFields: web.MaxFormFields})
	upload := d.Pages.Form(web.FormLimits{MaxBytes: meal.MaxFormBytes, MaxFields: web.MaxFormFields, MaxMemory: meal.FormMemory,
		TooLarge: fmt.Sprintf("The form was larger than %d MB. Choose a smaller photo.", meal.MaxFormBytes>>20)})
	full := refuseFull(d.Pages, d.Quota)

	r := chi.NewRouter()
	if requests != nil {
		r.Use(requests.Count)
	}
	r.Use(middleware.GetHead) // HEAD is answered by the GET route, without a body
	r.Use(web.RequestID())
	// Successful recipient photo requests are not logged (a page makes up
	// to 90); failed ones are.
	r.Use(web.AccessLog(d.Log, recipientPhotoRoute))
	r.Use(d.Pages.Recover)
	// Cross-site request protection (Sec-Fetch-Site, else Origin against
	// Host) refuses with our error page and a log line naming both sides:
	// a proxy that rewrites Host fails every form, and this is where its
	// operator looks.
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.Log.Warn("cross-origin request refused", "method", r.Method, "route", web.RoutePattern(r),
			"origin", r.Header.Get("Origin"), "host", r.Host, "sec_fetch_site", r.Header.Get("Sec-Fetch-Site"))
		d.Pages.Error(w, r, &web.Error{Status: http.StatusForbidden, Title: "Sent from another site",
			Msg: "This form was not accepted: it looked as if another site sent it. Reload the page and send it again. " +
				"If you run this server and every form ends here, the proxy in front of it changes the Host header (see deploy/README.md)."})
	}))
	r.Use(cop.Handler)
	r.Use(web.Compress())

	r.Get("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		w.Write([]byte("ok\n"))
	})
	// Readiness: DynamoDB and S3 answer, local storage takes writes, the
	// lease is held (readiness.Checker); /healthz above is liveness only.
	r.Get("/readyz", d.Ready.ServeHTTP)
	r.Get("/static/*", d.Static.ServeHTTP)
	// The web app manifest at a fixed address too (pages link the
	// versioned one under /static/); browsers fetch it without cookies.
	r.Get("/manifest.webmanifest", d.Static.File(web.ManifestName))
	// The service worker, at the root so that its scope is the whole
	// app, revalidated on every update check (no digest in its URL:
	// Static serves it no-cache); pages register it by this path.
	r.Get(ServiceWorkerPath, serviceWorker(d.Static))
	// Local mode's stand-in sign-in provider: what a browser asks of it
	// (its page, authorization, discovery, keys) is a GET; the app's own
	// token exchange reaches it in the process, never through here.
	// Another party to the sign-in, so no session; it answers this
	// machine's browsers only. Absent in server and AWS mode.
	if d.SignIn != nil {
		r.Get(localenv.SignInPath+"/*", d.SignIn.ServeHTTP)
	}

	// Share recipients: no session, no sign-in; the token is the only
	// credential. Every response, refusals included, carries no-referrer
	// and noindex. Each request reads the share and its owner's users row
	// before anything else (share.Handler.open).
	r.Route("/s/{token}", func(r chi.Router) {
		r.Use(share.RecipientHeaders)
		// HEAD is routed here by name: GetHead (above) does not reach
		// into a mounted router. A HEAD is never counted as an open.
		page, week, photo := d.Pages.Handle(d.Shares.Page), d.Pages.Handle(d.Shares.Week), d.Pages.Handle(d.Shares.Photo)
		mealPage, print := d.Pages.Handle(d.Shares.Meal), d.Pages.Handle(d.Shares.Print)
		r.Get("/", page)
		r.Head("/", page)
		r.Get("/week", week)
		r.Head("/week", week)
		r.Get("/print", print)
		r.Head("/print", print)
		r.Get("/photo/{date}/{meal_id}", photo)
		r.Head("/photo/{date}/{meal_id}", photo)
		r.Get("/meals/{date}/{meal_id}", mealPage)
		r.Head("/meals/{date}/{meal_id}", mealPage)
		// The recipient's only writes, for links that take comments;
		// cross-origin protection applies as to every POST.
		// Refused like the owners' writes while storage takes none.
		writes := refuseWrites(d.Pages, d.WriteHealth)
		r.With(writes, form).Post("/meals/{date}/{meal_id}/comments", d.Pages.Handle(d.Shares.Comment))
		r.With(writes, form).Post("/weeks/{start}/reviewed", d.Pages.Handle(d.Shares.Reviewed))
	})
	// What a shared diary link is: where a recipient's brand link and
	// refusals lead, instead of the owners' sign-in. No token, no session.
	r.Get(share.AboutPath, d.Pages.Handle(d.Shares.About))

	r.Group(func(r chi.Router) {
		r.Use(d.Sessions.LoadAndSave)

		// Public.
		r.Get("/", d.Pages.Handle(d.Auth.Home))
		r.Get("/login", d.Pages.Handle(d.Auth.Login))
		r.Get("/auth/callback", d.Pages.Handle(d.Auth.Callback))
		r.With(form).Post("/logout", d.Pages.Handle(d.Auth.Logout))
		r.Get("/invite/{token}", d.Pages.Handle(d.Invites.Landing))

		// The page after an account deletion: the session is gone by then.
		r.Get("/account/deleted", d.Pages.Handle(d.Account.Deleted))

		// Owners (every signed-in user). Every write holds the account's
		// write gate, so a deletion waits for it (or refuses it).
		r.Group(func(r chi.Router) {
			r.Use(d.Auth.RequireUser)
			r.Use(refuseWrites(d.Pages, d.WriteHealth))
			r.Use(d.Auth.HoldWrites)
			r.Get("/meals", d.Pages.Handle(d.Meals.List))
			r.Get("/meals/new", d.Pages.Handle(d.Meals.New))
			r.Get("/meals/search", d.Pages.Handle(d.Meals.Search))
			r.Get("/meals/pending/{token}", d.Pages.Handle(d.Meals.PendingPhoto))
			r.With(full, upload).Post("/meals", d.Pages.Handle(d.Meals.Create))
			r.Get("/meals/{date}/{meal_id}", d.Pages.Handle(d.Meals.Detail))
			r.Get("/meals/{date}/{meal_id}/edit", d.Pages.Handle(d.Meals.Edit))
			r.With(upload).Post("/meals/{date}/{meal_id}", d.Pages.Handle(d.Meals.Update))
			r.With(form).Post("/meals/{date}/{meal_id}/delete", d.Pages.Handle(d.Meals.Delete))
			r.With(form).Post("/meals/{date}/{meal_id}/move", d.Pages.Handle(d.Meals.Move))
			r.With(form).Post("/meals/{date}/{meal_id}/comments/{comment_id}/delete", d.Pages.Handle(d.Meals.DeleteComment))
			r.Get("/shares", d.Pages.Handle(d.Shares.List))
			r.With(form).Post("/shares", d.Pages.Handle(d.Shares.Create))
			r.With(form).Post("/shares/{token}/revoke", d.Pages.Handle(d.Shares.Revoke))
			r.Get("/shares/{token}/qr.svg", d.Pages.Handle(d.Shares.QR))
			r.Get("/shares/{token}/comments", d.Pages.Handle(d.Shares.LinkComments))
			r.Get("/account", d.Pages.Handle(d.Account.Page))
			r.With(form).Post("/account/timezone", d.Pages.Handle(d.Account.TimeZone))
			r.With(form).Post("/account/name", d.Pages.Handle(d.Account.Name))
			r.With(form).Post("/account/devices/sign-out", d.Pages.Handle(d.Account.EndAllDevices))
			r.With(form).Post("/account/devices/{id}/sign-out", d.Pages.Handle(d.Account.EndDevice))
			r.Get("/account/export.json", d.Pages.Handle(d.Account.Export))
			r.Get("/account/export.zip", d.Pages.Handle(d.Account.ExportZip))
			// The import reads its own body as it arrives (a zip of up to
			// NDIRO_IMPORT_MAX_BYTES, streamed into the bucket), so it has
			// its own limits instead of the form middleware's: the size
			// limit, 10 small fields before the zip, multipart only.
			r.With(full).Post(account.ImportPath, d.Pages.Handle(d.Account.Import))
			r.Get(account.ImportPath, d.Pages.Handle(d.Account.ImportPage))
			r.Get("/account/delete", d.Pages.Handle(d.Account.DeletePage))
			r.With(form).Post("/account/delete", d.Pages.Handle(d.Account.Delete))

			// Admins.
			r.Group(func(r chi.Router) {
				r.Use(d.Auth.RequireAdmin)
				r.Get("/admin", func(w http.ResponseWriter, r *http.Request) { web.Redirect(w, r, "/admin/users") })
				r.Get("/admin/users", d.Pages.Handle(d.Admin.Users))
				r.Get("/admin/users/{user_id}/delete", d.Pages.Handle(d.Account.AdminDeletePage))
				r.With(form).Post("/admin/users/{user_id}/delete", d.Pages.Handle(d.Account.AdminDelete))
				r.With(form).Post("/admin/users/{user_id}/resume", d.Pages.Handle(d.Account.Resume))
				r.With(form).Post("/admin/users/{user_id}/role", d.Pages.Handle(d.Admin.SetRole))
				r.With(form).Post("/admin/users/{user_id}/disable", d.Pages.Handle(d.Admin.Disable))
				r.With(form).Post("/admin/users/{user_id}/enable", d.Pages.Handle(d.Admin.Enable))
				r.Get("/admin/users/{user_id}/move", d.Pages.Handle(d.Admin.MovePage))
				r.With(form).Post("/admin/users/{user_id}/move", d.Pages.Handle(d.Admin.MarkMove))
				r.With(form).Post("/admin/users/{user_id}/move/cancel", d.Pages.Handle(d.Admin.UnmarkMove))
				r.With(form).Post("/admin/users/{user_id}/move/extend", d.Pages.Handle(d.Admin.ExtendMove))
				r.Get("/admin/monitor", d.Pages.Handle(d.Admin.Monitor))
				r.With(form).Post("/admin/monitor/check", d.Pages.Handle(d.Admin.Check))
				r.With(form).Post("/admin/monitor/clean/{kind}", d.Pages.Handle(d.Admin.Clean))
				r.Get("/admin/invites", d.Pages.Handle(d.Invites.List))
				r.With(form).Post("/admin/invites", d.Pages.Handle(d.Invites.Create))
				r.With(form).Post("/admin/invites/{token}/revoke", d.Pages.Handle(d.Invites.Revoke))
				r.Get("/admin/shares", d.Pages.Handle(d.Shares.AdminList))
				r.With(form).Post("/admin/shares/{token}/revoke", d.Pages.Handle(d.Shares.AdminRevoke))
			})
		})
	})

	r.NotFound(d.Pages.Handle(func(w http.ResponseWriter, r *http.Request) error {
		return web.NotFound("There is no page at this address.")
	}))
	r.MethodNotAllowed(d.Pages.Handle(func(w http.ResponseWriter, r *http.Request) error {
		return &web.Error{Status: http.StatusMethodNotAllowed, Msg: "This page does not accept that kind of request."}
	}))
	return r
}
