package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os/exec"
	"sync"
	"time"

	"github.com/alexedwards/scs/v2"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"ndiro/internal/account"
	"ndiro/internal/admin"
	"ndiro/internal/auth"
	"ndiro/internal/config"
	"ndiro/internal/dynamo"
	"ndiro/internal/invite"
	"ndiro/internal/lease"
	"ndiro/internal/limit"
	"ndiro/internal/meal"
	"ndiro/internal/metrics"
	"ndiro/internal/photo"
	"ndiro/internal/readiness"
	"ndiro/internal/share"
	"ndiro/internal/store"
	"ndiro/internal/store/cloud"
	"ndiro/internal/user"
	"ndiro/internal/version"
	"ndiro/internal/web"
	"ndiro/static"
	"ndiro/templates"
)

// Backends are the clients the app runs on: AWS or localenv.
type Backends struct {
	DynamoDB *dynamodb.Client
	S3       *s3.Client
	Bucket   string
	Tables   dynamo.Tables
	// Items is the storage seam's items (package store) the stores that
	// have moved onto it use; nil is the DynamoDB engine on DynamoDB.
	Items store.Items
	// Provider is the OIDC identity provider (Google, another provider, or
	// the local mock).
	Provider auth.Provider
	// HEICWorker, if set, makes the command that runs the HEIC decoder
	// worker; nil runs this executable as "ndiro heic-worker".
	HEICWorker func() *exec.Cmd
	// WebPWorker, like HEICWorker, makes the WebP encoder's worker
	// command; nil runs this executable as "webp-worker".
	WebPWorker func() *exec.Cmd
	// Variants runs the variant job (meal.Variants), which makes every
	// photo's sized copies in the background: cmd/ndiro always does;
	// tests only when they ask (apptest.Options.Variants), as its WebP
	// encodes cost a second of CPU a photo.
	Variants bool
	// Clock, if set, is what background work (the monitor's paced reads)
	// waits on; nil is the wall clock, with Build's now.
	Clock limit.Clock
	// WriteHealth, if set, returns nil while local storage takes writes
	// and otherwise why not, wrapping storage.ErrFull or storage.ErrFailed
	// (local and server mode: localenv.Env.WriteHealth). While it or
	// Lease.Err fails, signed-in users' unsafe requests are refused early
	// (writeHealth); /readyz reports it as "local storage".
	WriteHealth func() error
	// Lease is AWS mode's one-writer lease (nil in local mode, whose data
	// dir lock refuses a second process); App.Lease hands it on.
	Lease *lease.Lease
	// LeaseHealth, if set, stands in for Lease.Err as /readyz's lease
	// check (tests); with neither, the lease counts as held.
	LeaseHealth func() error
	// Metrics, if set, is the registry the app's series join: the SDK
	// middleware on the clients above (metrics.Metrics.DynamoDB, S3) and
	// local mode's journal count into it too. nil makes one of its own
	// (App.Metrics), counting the app's requests and figures only.
	Metrics *metrics.Metrics
	// SignIn, if set, is local mode's stand-in sign-in for browsers
	// (localenv.Env.SignIn), whose GETs the app serves under
	// localenv.SignInPath; nil in server and AWS mode, whose provider is
	// elsewhere.
	SignIn http.Handler
}

// leaseHealth is /readyz's lease check: LeaseHealth, else Lease.Err,
// else nil (no lease: the check is left out).
func (b Backends) leaseHealth() func() error {
	switch {
	case b.LeaseHealth != nil:
		return b.LeaseHealth
	case b.Lease != nil:
		return b.Lease.Err
	}
	return nil
}

// writeHealth is the early refusal of unsafe requests: local storage's
// WriteHealth, then the writer lease's Err (storage.ErrNotWriter: 503
// with Retry-After); nil when there is neither.
func (b Backends) writeHealth() func() error {
	local, lease := b.WriteHealth, b.Lease
	switch {
	case lease == nil:
		return local
	case local == nil:
		return lease.Err
	}
	return func() error {
		if err := local(); err != nil {
			return err
		}
		return lease.Err()
	}
}

// readinessLocals are /readyz's checks of this process's own state: local
// storage where there is some, the lease where there is one.
func (b Backends) readinessLocals() []readiness.Local {
	var locals []readiness.Local
	if b.WriteHealth != nil {
		locals = append(locals, readiness.Local{Name: "local storage", Check: b.WriteHealth})
	}
	if lease := b.leaseHealth(); lease != nil {
		locals = append(locals, readiness.Local{Name: "lease", Check: lease})
	}
	return locals
}

// clock returns b.Clock, or the wall clock reading now.
func (b Backends) clock(now func() time.Time) limit.Clock {
	if b.Clock != nil {
		return b.Clock
	}
	return wallClock{now}
}

// wallClock sleeps for real and reads now.
type wallClock struct{ now func() time.Time }

func (c wallClock) Now() time.Time { return c.now() }

func (c wallClock) Sleep(ctx context.Context, d time.Duration) error {
	return limit.SystemClock{}.Sleep(ctx, d)
}

// App is the assembled application.
type App struct {
	Handler http.Handler
	// Pages are the parsed templates (tests list them).
	Pages    *web.Pages
	Sessions *scs.SessionManager
	// Lease is Backends.Lease: nil in local mode. Lease.State says
	// whether this process may write (the readiness check and metrics
	// read it).
	Lease *lease.Lease
	// SessionStore is the session manager's store: sessions on the users
	// rows (Sessions.Store is it too).
	SessionStore *user.Sessions
	Users        *user.Store
	Invites      *invite.Store
	Meals        *meal.Store
	Shares       *share.Store
	Photos       *photo.Server
	// Objects is the photo store over the bucket (tests change how it
	// stages imports: photo.Store.SetStagePartSize).
	Objects *photo.Store
	// Pipeline decodes uploads against the decode budget.
	Pipeline *photo.Pipeline
	// HEIC runs HEIC decodes in the worker process; Close it at shutdown.
	HEIC *photo.HEICDecoder
	// WebP is the WebP encoder's worker; Variants the variant job, nil
	// unless Backends.Variants.
	WebP     *photo.WebPEncoder
	Variants *meal.Variants
	// Deletions runs account deletions; start-up resumes those a stop
	// interrupted (ResumeAll).
	Deletions *account.Deleter
	// Imports runs imports of export zips; start-up resumes those a stop
	// interrupted (ResumeAll).
	Imports *account.Importer
	// Stagings admits the import's uploads (tests drive its ticker:
	// account.Stagings.SetHooks).
	Stagings *account.Stagings
	// Moves runs the moves of accounts waiting for their owner to the
	// subject that signed in for them; start-up resumes those a stop
	// interrupted (ResumeAll).
	Moves *account.Mover
	// Monitor counts what the app holds and checks for orphans.
	Monitor *admin.Monitor
	// Metrics holds the app's Prometheus series (Backends.Metrics, or
	// the app's own); its Handler serves the metrics listener.
	Metrics *metrics.Metrics
	// Ready answers /readyz.
	Ready *readiness.Checker

	// stopOpens ends the writer of share opens (Store.RunOpens), which
	// closes opensDone once it has written the last of them.
	stopOpens context.CancelFunc
	opensDone chan struct{}
	// stopVariants and variantsDone stop the variant job and say it has.
	stopVariants context.CancelFunc
	variantsDone chan struct{}
}

// Close stops the background work (imports, account deletions and moves, which
// the next start resumes, the monitor's count and orphan job, and the writer of
// share opens, which writes what it holds first) and waits for it until
// ctx ends. Call it once the HTTP server has stopped taking requests and
// before the backends close; it returns the errors joined.
func (a *App) Close(ctx context.Context) error {
	a.stopOpens()
	a.stopVariants()
	var wg sync.WaitGroup
	errs := make([]error, 5)
	wg.Go(func() { errs[0] = errors.Join(a.Imports.Close(ctx), a.Deletions.Close(ctx)) })
	wg.Go(func() { errs[4] = a.Moves.Close(ctx) })
	wg.Go(func() { errs[1] = a.Monitor.Close(ctx) })
	wg.Go(func() {
		select {
		case <-a.opensDone:
		case <-ctx.Done():
			errs[2] = fmt.Errorf("server: share opens not written: %w", ctx.Err())
		}
	})
	wg.Go(func() {
		select {
		case <-a.variantsDone:
		case <-ctx.Done():
			errs[3] = fmt.Errorf("server: variant job not stopped: %w", ctx.Err())
		}
		a.WebP.Close()
	})
	wg.Wait()
	return errors.Join(errs...)
}

// Build constructs every store and handler from cfg and b and returns the
// routed handler. now is the clock every rule uses (time.Now outside tests).
// It fails if a template does not parse or the identity provider cannot be
// discovered.
func Build(ctx context.Context, cfg config.Config, b Backends, log *slog.Logger, now func() time.Time) (*App, error) {
	st, err := web.NewStatic(static.FS)
	if err != nil {
		return nil, fmt.Errorf("server: static files: %w", err)
	}
	if err := web.AddManifest(st); err != nil {
		return nil, err
	}
	pages, err := web.NewPages(templates.FS, st, auth.ViewerWith(auth.UserHashKey(cfg.OIDCClientSecret)), cfg.OIDCName, log)
	if err != nil {
		return nil, err
	}
	st.NotFound = pages.Handle(func(http.ResponseWriter, *http.Request) error {
		return web.NotFound("There is no such file.")
	})
	pages.SecureCookies(cfg.Production())

	sessions := scs.New()
	sessions.Lifetime = 30 * 24 * time.Hour
	sessions.IdleTimeout = 14 * 24 * time.Hour
	sessions.Cookie.Name = "ndiro_session"
	sessions.Cookie.HttpOnly = true
	sessions.Cookie.SameSite = http.SameSiteLaxMode
	sessions.Cookie.Secure = cfg.Production()
	sessions.Codec = auth.SessionCodec{} // strings only; gob costs ~20 µs a request
	sessions.ErrorFunc = func(w http.ResponseWriter, r *http.Request, err error) { pages.Error(w, r, err) }

	users := user.NewStore(b.DynamoDB, b.Tables.Users.Name, now)
	// Sessions live on the users rows, so a restart signs nobody out
	// (the store hashes tokens itself: HashTokenInStore stays off).
	signedIn := user.NewSessions(users, user.SessionDeps{UserIDOf: auth.SessionCodec{}.UserID, Log: log})
	sessions.Store = signedIn
	items := b.Items
	if items == nil {
		items = cloud.NewItems(b.DynamoDB)
	}
	invites := invite.NewStore(items, b.Tables.Invites.Seam())
	meals := meal.NewStore(b.DynamoDB, b.Tables.Meals.Name)
	shares := share.NewStore(b.DynamoDB, b.Tables.Shares.Name, now)
	photos := photo.NewStore(b.S3, b.Bucket)
	photoServer := photo.NewServer(photos, photo.NewCache(cfg.PhotoCacheBytes))
	gate := &user.Gate{}
	quota := user.Quota{Meals: cfg.QuotaMeals, PhotoBytes: cfg.QuotaBytes}
	budget, wait := cfg.DecodeBudget, cfg.UploadWait
	if budget == 0 {
		budget = photo.DefaultBudget
	}
	if wait == 0 {
		wait = photo.DefaultWait
	}
	heic := photo.NewHEICDecoder(b.HEICWorker, photo.DefaultHEICLimits(), wait, log)
	webp := photo.NewWebPEncoder(b.WebPWorker, photo.WebPLimits(), wait, log)
	pipeline := photo.NewPipeline(budget, wait).WithHEIC(heic).WithWebP(webp)
	photoCache := photoServer.Cache()
	var variants *meal.Variants
	if b.Variants {
		// The scan's reads get the monitor's share of the read caps, on a
		// pacer of their own.
		variants = meal.NewVariants(meal.VariantDeps{
			Rows: meals, Objects: photos, Make: pipeline.MakeVariants, Gate: gate, Forget: photoCache.Forget, Usage: users.AddUsage,
			Pace: limit.NewPacer(admin.ReadUnitsPerSecond, admin.ReadUnitsBurst, b.clock(now)).Wait, Log: log,
		})
	}
	monitor := admin.NewMonitor(admin.MonitorDeps{
		Users: users, Meals: meals, Shares: shares, Invites: invites, Photos: photos, Cache: photoCache, HEIC: heic.Status, Admission: pipeline.Admission,
		Clock: b.clock(now), Mode: string(cfg.Mode), Grace: cfg.OrphanGrace, Log: log,
	})
	var kick func(*meal.Meal)
	if variants != nil {
		kick = variants.Kick
	}
	importer := account.NewImporter(account.ImporterDeps{
		Users: users, Meals: meals, Photos: photos, Process: pipeline.Process, Gate: gate,
		Forget: photoCache.Forget, Kick: kick, Quota: quota, Log: log, Now: now,
	})
	stagings := account.NewStagings(account.StagingLimits{
		PerOwner: cfg.ImportStagingPerOwner, Total: cfg.ImportStagingMax, MaxBytes: cfg.ImportMaxBytes,
		MinBytes: cfg.ImportMinBytes, Window: cfg.ImportMinWindow,
	})
	deleter := account.NewDeleter(account.DeleterDeps{
		Users: users, Gate: gate, Photos: photos, Meals: meals, Shares: shares, Invites: invites, Sessions: signedIn,
		Imports: importer, Log: log, Now: now,
	})
	mover := account.NewMover(account.MoverDeps{
		Users: users, Gate: gate, Photos: photos, Meals: meals, Shares: shares, Invites: invites, Sessions: signedIn,
		Imports: importer, Log: log, Now: now,
	})

	// Unknown invite tokens count against one allowance per address,
	// whether tried at the landing page or at /login?invite=.
	inviteMisses := invite.NewMissLimiter(now)
	authH, err := auth.NewHandler(ctx, b.Provider, auth.Deps{
		Sessions:           sessions,
		Users:              users,
		Invites:            invites,
		Pages:              pages,
		IsAdminEmail:       cfg.IsAdminEmail,
		ProviderName:       cfg.OIDCName,
		Gate:               gate,
		Now:                now,
		Log:                log,
		SecureCookies:      cfg.Production(),
		TrustedProxyHeader: cfg.TrustedProxyHeader,
		InviteMisses:       inviteMisses,
		Moves:              mover,
	})
	if err != nil {
		return nil, err
	}

	mx := b.Metrics
	if mx == nil {
		mx = metrics.New(version.Info())
	}
	if err := registerFigures(mx, figures{
		cache: photoCache, pipeline: pipeline, heic: heic, shares: shares, deletions: deleter,
	}); err != nil {
		return nil, err
	}
	ready := readiness.New([]readiness.Backend{
		{Name: "DynamoDB", Deadline: cfg.Storage.Item, Check: func(ctx context.Context) error {
			return dynamo.Ping(ctx, b.DynamoDB, b.Tables.Users)
		}},
		{Name: "S3", Deadline: cfg.Storage.Item, Check: func(ctx context.Context) error {
			return photo.Ping(ctx, b.S3, b.Bucket)
		}},
	}, b.readinessLocals(), now)

	h, err := New(Deps{
		Log:      log,
		Pages:    pages,
		Static:   st,
		Sessions: sessions,
		Auth:     authH,
		Invites: invite.NewHandler(invite.Deps{
			Store:              invites,
			Pages:              pages,
			BaseURL:            cfg.BaseURL,
			Now:                now,
			SignedIn:           authH.SessionUserID,
			Misses:             inviteMisses,
			TrustedProxyHeader: cfg.TrustedProxyHeader,
		}),
		Meals: meal.NewHandler(meal.Deps{
			Store:    meals,
			Users:    users,
			Photos:   photos,
			Server:   photoServer,
			Pipeline: pipeline,
			Variants: variants,
			Pages:    pages,
			Now:      now,
			Clock:    b.clock(now),
			Quota:    quota,
			Log:      log,
		}),
		Shares: share.NewHandler(share.Deps{
			Store:              shares,
			Meals:              meals,
			Users:              users,
			Photos:             photoServer,
			Pages:              pages,
			Now:                now,
			Log:                log,
			BaseURL:            cfg.BaseURL,
			IconPath:           st.URL("icon-512.png"),
			TrustedProxyHeader: cfg.TrustedProxyHeader,
		}),
		Account: account.NewHandler(account.Deps{
			Users:          users,
			Meals:          meals,
			Shares:         shares,
			Photos:         photos,
			Deleter:        deleter,
			SignOut:        authH.SignOut,
			Sessions:       signedIn,
			SessionID:      func(ctx context.Context) string { return user.SessionID(sessions.Token(ctx)) },
			Pages:          pages,
			Now:            now,
			Log:            log,
			BaseURL:        cfg.BaseURL,
			IsAdminEmail:   cfg.IsAdminEmail,
			Importer:       importer,
			ImportMaxBytes: cfg.ImportMaxBytes,
			Stagings:       stagings,
		}),
		Admin: admin.NewHandler(admin.Deps{
			Users:           users,
			Pages:           pages,
			DeletionRunning: deleter.Running,
			Monitor:         monitor,
			Now:             now,
			IsAdminEmail:    cfg.IsAdminEmail,
			Log:             log,
			Issuer:          b.Provider.Issuer,
			MarkLifetime:    cfg.MoveMarkLifetime,
		}),
		HSTS:        cfg.Production(),
		WriteHealth: b.writeHealth(),
		Quota:       quota,
		Ready:       ready,
		Metrics:     mx,
		SignIn:      b.SignIn,
	})
	if err != nil {
		return nil, err
	}
	// Recipient visits are counted in memory and written every
	// share.OpensEvery, and at Close.
	opensCtx, stopOpens := context.WithCancel(context.WithoutCancel(ctx))
	opensDone := make(chan struct{})
	go func() {
		defer close(opensDone)
		shares.RunOpens(opensCtx, func(err error) { log.Warn("share opens not written yet", "err", err) })
	}()
	variantsCtx, stopVariants := context.WithCancel(context.WithoutCancel(ctx))
	variantsDone := make(chan struct{})
	go func() {
		defer close(variantsDone)
		if variants != nil {
			variants.Run(variantsCtx)
		}
	}()
	return &App{Handler: h, Pages: pages, Sessions: sessions, Lease: b.Lease, SessionStore: signedIn, Users: users, Invites: invites, Meals: meals, Shares: shares, Photos: photoServer, Objects: photos, Pipeline: pipeline, HEIC: heic, WebP: webp, Variants: variants, Deletions: deleter, Imports: importer, Stagings: stagings, Moves: mover, Monitor: monitor,
		Metrics: mx, Ready: ready, stopOpens: stopOpens, opensDone: opensDone, stopVariants: stopVariants, variantsDone: variantsDone}, nil
}
