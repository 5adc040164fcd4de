package share

import (
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"ndiro/internal/limit"
	"ndiro/internal/meal"
	"ndiro/internal/photo"
	"ndiro/internal/user"
	"ndiro/internal/web"
)

// Rate limits of the recipient routes: lookups of unknown tokens per
// client address (DESIGN.md), and photo reads per share, so that a leaked
// link cannot be used to read the bucket without bound.
const (
	// MissBurst and MissEvery limit lookups of tokens that name no share,
	// per client address (limit.ClientIP): 20 at once, then one every 6 s.
	// A person mistyping a link is never stopped; guessing 256-bit tokens
	// is slowed to 10 a minute. Once the allowance is spent, every share
	// request from that address is refused until it refills, so a guess
	// that hits cannot be told from one that misses.
	MissBurst = 20
	MissEvery = 6 * time.Second
	// PhotoBurst and PhotoEvery limit photo reads (304s included) per
	// share: 400 at once (a month of meals opened a few times), then two a
	// second, so a leaked link cannot be used to hammer the bucket.
	PhotoBurst = 400
	PhotoEvery = 500 * time.Millisecond
	// limitKeys bounds each limiter's memory (addresses or tokens).
	limitKeys = 10_000
)

// Handler serves the owner's share pages, the admin's share list and the
// recipient's pages and photos.
type Handler struct {
	store       *Store
	meals       *meal.Store
	users       *user.Store
	photos      *photo.Server
	pages       *web.Pages
	now         func() time.Time
	log         *slog.Logger
	baseURL     string
	iconPath    string
	proxyHeader string
	misses      *limit.Limiter // unknown tokens, per client address
	photoReads  *limit.Limiter // photo reads, per share token
	comments    *limit.Limiter // comments and reviewed marks, per share token
	// linkLocks orders the making of links taking comments per owner
	// (crowded).
	linkLocks ownerLocks
}

// Deps are the Handler's collaborators.
type Deps struct {
	Store  *Store
	Meals  *meal.Store
	Users  *user.Store
	Photos *photo.Server
	Pages  *web.Pages
	// Now is the clock of every rule (expiry, opens, rate limits).
	Now func() time.Time
	Log *slog.Logger
	// BaseURL is the public origin links are built on, e.g.
	// "https://ndiro.example.org".
	BaseURL string
	// IconPath is the app icon's path under BaseURL, the image of every
	// recipient page's preview card (og:image).
	IconPath string
	// TrustedProxyHeader names the header carrying the client address
	// (config.Config.TrustedProxyHeader); "" means the direct peer.
	TrustedProxyHeader string
}

// NewHandler returns the share pages.
func NewHandler(d Deps) *Handler {
	return &Handler{
		store:       d.Store,
		meals:       d.Meals,
		users:       d.Users,
		photos:      d.Photos,
		pages:       d.Pages,
		now:         d.Now,
		log:         d.Log,
		baseURL:     d.BaseURL,
		iconPath:    d.IconPath,
		proxyHeader: d.TrustedProxyHeader,
		misses:      limit.New(limit.Rule{Every: MissEvery, Burst: MissBurst, MaxKeys: limitKeys}, d.Now),
		photoReads:  limit.New(limit.Rule{Every: PhotoEvery, Burst: PhotoBurst, MaxKeys: limitKeys}, d.Now),
		comments:    limit.New(limit.Rule{Every: CommentEvery, Burst: CommentBurst, MaxKeys: limitKeys}, d.Now),
	}
}

// link returns the public link of the share tok: BaseURL + "/s/" + tok.
func (h *Handler) link(tok string) string { return h.baseURL + "/s/" + tok }

// rowID is the HTML id of a share's row on the lists: "share-" and the
// token's first 8 characters (enough to be unique on one page, too few
// to open the link).
func rowID(tok string) string { return "share-" + tok[:8] }

type ownerRow struct {
	Share
	ID    string
	Link  string
	QRURL string
	State State
	// Until is when the link stops: "never", or a time in the owner's zone,
	// named ("30 Dec 2026 11:34 CET").
	Until string
	// FirstOpened and LastOpened are in the owner's zone; "" if never.
	FirstOpened string
	LastOpened  string
	// CommentsURL is the page of the link's comments.
	CommentsURL string
	// ReviewedWeeks names the weeks the recipient marked reviewed, in
	// order: "1 Sep – 7 Sep".
	ReviewedWeeks []string
}

type ownerPage struct {
	web.Base
	Form          Form
	Shares        []ownerRow
	ExpiryChoices []int
	MaxDays       int
}

// List is GET /shares: the create form and the owner's links with what
// each shows, its state and its opens.
func (h *Handler) List(w http.ResponseWriter, r *http.Request) error {
	u := user.FromContext(r.Context())
	return h.renderList(w, r, http.StatusOK, DefaultForm(h.now().In(u.Location())))
}

func (h *Handler) renderList(w http.ResponseWriter, r *http.Request, status int, f Form) error {
	u := user.FromContext(r.Context())
	all, err := h.store.ListByOwner(r.Context(), u.ID)
	if err != nil {
		return err
	}
	now, loc := h.now(), u.Location()
	when := func(t *time.Time) string {
		if t == nil {
			return ""
		}
		return t.In(loc).Format("2 Jan 2006 15:04 MST") // the zone named: recipients and admins read UTC
	}
	rows := make([]ownerRow, len(all))
	for i, sh := range all {
		rows[i] = ownerRow{
			Share:       sh,
			ID:          rowID(sh.Token),
			Link:        h.link(sh.Token),
			QRURL:       "/shares/" + sh.Token + "/qr.svg",
			State:       sh.StateAt(now),
			Until:       "never",
			FirstOpened: when(sh.FirstOpenedAt),
			LastOpened:  when(sh.LastOpenedAt),
		}
		if e := sh.Expires(); e != nil {
			rows[i].Until = when(e)
		}
		rows[i].CommentsURL = "/shares/" + sh.Token + "/comments"
		rows[i].ReviewedWeeks = reviewedWeeks(&sh)
	}
	return h.pages.Render(w, r, status, "share/list", &ownerPage{
		Base:          web.Base{Title: "Shared links"},
		Form:          f,
		Shares:        rows,
		ExpiryChoices: ExpiryChoices[1:],
		MaxDays:       MaxDays,
	})
}

// Create is POST /shares: it makes a link from the form and shows the
// list, where it can be copied. A bad form re-renders with 422, the input
// kept and a message per field, and writes nothing; so does a link taking
// comments over days where meal.MaxCommentLinks links take them already
// (crowded), its message naming them.
func (h *Handler) Create(w http.ResponseWriter, r *http.Request) error {
	if err := r.ParseForm(); err != nil {
		return web.BadRequest("The form could not be read.")
	}
	u := user.FromContext(r.Context())
	f := Form{
		Label:    r.PostForm.Get("label"),
		From:     r.PostForm.Get("from"),
		To:       r.PostForm.Get("to"),
		Expiry:   r.PostForm.Get("expiry"),
		Notes:    r.PostForm.Get("notes"),
		Numbers:  r.PostForm.Get("numbers"),
		Comments: r.PostForm.Get("comments"),
	}
	now := h.now()
	sh, ok := f.Parse(u.ID, now)
	if !ok {
		return h.renderList(w, r, http.StatusUnprocessableEntity, f)
	}
	if sh.Comments {
		unlock := h.linkLocks.lock(u.ID)
		defer unlock()
		from, to := sh.Range()
		c, err := h.crowded(r.Context(), u.ID, from, to, now)
		if err != nil {
			return err
		}
		if c != nil {
			f.Errors["comments"] = c.message()
			return h.renderList(w, r, http.StatusUnprocessableEntity, f)
		}
	}
	created, err := h.store.Create(r.Context(), sh)
	if err != nil {
		return err
	}
	web.SetFlash(w, "Link created. Copy it below and send it to "+created.Label+".")
	web.Redirect(w, r, "/shares#"+rowID(created.Token))
	return nil
}

var errNotYours = &web.Error{Status: http.StatusNotFound, Title: "Link not found", Msg: "There is no such link among yours. It may have been revoked already."}

// Revoke is POST /shares/{token}/revoke: it deletes one of the owner's
// links, so the very next request for it, page or photo, is refused.
func (h *Handler) Revoke(w http.ResponseWriter, r *http.Request) error {
	err := h.store.Revoke(r.Context(), chi.URLParam(r, "token"), user.ID(r.Context()))
	if errors.Is(err, ErrNotFound) {
		return errNotYours
	}
	if err != nil {
		return err
	}
	web.SetFlash(w, "Link revoked: it no longer opens, and its photos stop showing.")
	web.Redirect(w, r, "/shares")
	return nil
}

// QR is GET /shares/{token}/qr.svg: a QR code of the owner's link, to
// show on a phone or print for a clinic. Other people's links are 404.
func (h *Handler) QR(w http.ResponseWriter, r *http.Request) error {
	sh, err := h.store.Get(r.Context(), chi.URLParam(r, "token"))
	if errors.Is(err, ErrNotFound) || err == nil && sh.OwnerID != user.ID(r.Context()) {
		return errNotYours
	}
	if err != nil {
		return err
	}
	svg, err := qrSVG(h.link(sh.Token))
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "image/svg+xml")
	w.Header().Set("Cache-Control", "private, no-store")
	_, err = w.Write(svg)
	return err
}

type adminRow struct {
	Share
	ID         string
	OwnerEmail string // "" if the owner's row is gone
	State      State
	// LastOpened is in the owner's zone, named; "" if never.
	LastOpened string
}

type adminPage struct {
	web.Base
	Shares []adminRow
}

// AdminList is GET /admin/shares: every share, by paged Scans of shares
// and users, with its owner's email, range, state and opens. Not the
// label: it says who the link is for ("Dr. X, psychiatrist"), and the
// owner is told only they see it.
func (h *Handler) AdminList(w http.ResponseWriter, r *http.Request) error {
	all, err := h.store.List(r.Context())
	if err != nil {
		return err
	}
	users, err := h.users.List(r.Context())
	if err != nil {
		return err
	}
	owners := make(map[string]*user.User, len(users))
	for i := range users {
		owners[users[i].ID] = &users[i]
	}
	now := h.now()
	rows := make([]adminRow, len(all))
	for i, sh := range all {
		sh.Label = "" // who the link is for is the owner's to know
		rows[i] = adminRow{Share: sh, ID: rowID(sh.Token), State: sh.StateAt(now)}
		owner := owners[sh.OwnerID]
		if owner == nil {
			owner = &user.User{} // gone: UTC, named
		}
		rows[i].OwnerEmail = owner.Email
		if sh.LastOpenedAt != nil {
			rows[i].LastOpened = when(*sh.LastOpenedAt, owner)
		}
	}
	return h.pages.Render(w, r, http.StatusOK, "share/admin", &adminPage{Base: web.Base{Title: "Shares"}, Shares: rows})
}

// AdminRevoke is POST /admin/shares/{token}/revoke: an admin deletes any
// share.
func (h *Handler) AdminRevoke(w http.ResponseWriter, r *http.Request) error {
	err := h.store.RevokeAny(r.Context(), chi.URLParam(r, "token"))
	if errors.Is(err, ErrNotFound) {
		return web.NotFound("There is no such share. It may have been revoked already.")
	}
	if err != nil {
		return err
	}
	web.SetFlash(w, "Share revoked: its link no longer opens.")
	web.Redirect(w, r, "/admin/shares")
	return nil
}
