// Command ndiro serves the meal photo diary. With no configuration it runs
// in local mode: DynamoDB, S3 and a stand-in for Google sign-in in-process,
// data under ./var. See README.md and deploy/README.md.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"
	_ "time/tzdata" // IANA zones in images without /usr/share/zoneinfo

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"ndiro/internal/auth"
	"ndiro/internal/config"
	"ndiro/internal/demo"
	"ndiro/internal/dynamo"
	"ndiro/internal/localenv"
	"ndiro/internal/meal"
	"ndiro/internal/photo"
	"ndiro/internal/server"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	limitMemory(os.Getenv)
	if err := run(ctx, os.Args, os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "ndiro:", err)
		os.Exit(1)
	}
}

// memoryOverhead is what the Go heap may hold beyond the photo cache's
// budget (requests in flight, photos being decoded, in local mode the
// in-process DynamoDB's tables) before the garbage collector works
// harder: with the binary's own pages, the process stays within the
// budget + 128 MB (make load checks it; without the limit it peaked at
// 210 MB there). It is a soft limit: decodes admitted by
// NDIRO_DECODE_BUDGET_BYTES that need more make the collector run more
// often while they last, they are not refused.
const memoryOverhead = 64 << 20

// limitMemory sets the Go runtime's soft memory limit to the photo cache
// budget (NDIRO_PHOTO_CACHE_BYTES) + memoryOverhead, unless GOMEMLIMIT
// says otherwise or the configuration does not load (run reports that).
// It is the whole process's setting, so main sets it, not run, which
// tests call in their own process.
func limitMemory(getenv func(string) string) {
	if getenv("GOMEMLIMIT") != "" {
		return
	}
	if cfg, err := config.Load(getenv); err == nil {
		debug.SetMemoryLimit(cfg.PhotoCacheBytes + memoryOverhead)
	}
}

// localBucket is the S3 bucket local mode keeps photos in.
const localBucket = "ndiro-photos"

// run starts ndiro and serves until ctx is cancelled, then shuts down
// gracefully. It writes the address to open, and logs, to stdout.
//
// "ndiro heic-worker" and "ndiro webp-worker" are the HEIC decoder and
// WebP encoder processes ndiro starts itself.
// "ndiro healthcheck" instead asks a running ndiro's /healthz on NDIRO_ADDR
// and fails unless it answers 200: the container's health check, which
// needs no shell or curl in the image.
func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	if len(args) > 1 && args[1] == "heic-worker" {
		// The HEIC decoder process the server starts: requests on stdin,
		// answers on stdout (photo.RunHEICWorker).
		return photo.RunHEICWorker(os.Stdin, os.Stdout)
	}
	if len(args) > 1 && args[1] == "webp-worker" {
		// The WebP encoder process (photo.RunWebPWorker).
		return photo.RunWebPWorker(os.Stdin, os.Stdout)
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		return err
	}
	if len(args) > 1 {
		switch args[1] {
		case "healthcheck":
			return healthcheck(ctx, cfg.Addr)
		default:
			return fmt.Errorf("unknown command %q; run ndiro with no arguments to serve, or \"ndiro healthcheck\" (\"ndiro heic-worker\" is started by ndiro itself)", args[1])
		}
	}
	var log *slog.Logger
	if cfg.Mode == config.ModeAWS {
		log = slog.New(slog.NewJSONHandler(stdout, nil))
	} else {
		log = slog.New(slog.NewTextHandler(stdout, nil))
	}

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s (NDIRO_ADDR): %w", cfg.Addr, err)
	}
	defer ln.Close()
	if cfg.BaseURL == "" {
		// Local mode: the address this machine's browser can open. A
		// wildcard listener (0.0.0.0, [::]) is opened on loopback.
		host, port, _ := net.SplitHostPort(ln.Addr().String())
		if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
			host = "127.0.0.1"
		}
		cfg.BaseURL = "http://" + net.JoinHostPort(host, port)
	}

	tables := dynamo.NewTables(cfg.TablePrefix)
	b := server.Backends{Tables: tables, Variants: true}
	switch cfg.Mode {
	case config.ModeLocal:
		env, err := localenv.Start(ctx, localenv.Options{DataDir: cfg.DataDir, Tables: tables, Bucket: localBucket, Logger: log})
		if err != nil {
			return err
		}
		defer func() {
			if err := env.Close(); err != nil {
				log.Error("local backends did not stop cleanly", "err", err)
			}
		}()
		b.DynamoDB, b.S3, b.Bucket = env.DynamoDB, env.S3, localBucket
		b.WriteHealth = env.WriteHealth // a full disk: writes refused early (507)
		// A crash between a photo's objects and its meal row leaves objects
		// no row names: remove them (and clear any photo whose objects are
		// gone) before serving.
		photos := photo.NewStore(env.S3, localBucket)
		if r, err := meal.RepairPhotos(ctx, meal.NewStore(env.DynamoDB, tables.Meals.Name), photos); err != nil {
			log.Error("photo check failed", "err", err)
		} else {
			logPhotoRepair(log, r)
		}
		// Uploads kept for a form being corrected live a day; in AWS a
		// lifecycle rule expires them (deploy/terraform), here this does.
		if n, err := photos.SweepPending(ctx, time.Now()); err != nil {
			log.Error("pending uploads not swept", "err", err)
		} else if n > 0 {
			log.Info("pending uploads swept", "objects", n)
		}
		b.Provider = auth.Provider{
			Issuer:       env.OIDC.Issuer(),
			ClientID:     env.OIDC.ClientID,
			ClientSecret: env.OIDC.ClientSecret,
			RedirectURL:  cfg.BaseURL + "/auth/callback",
			HTTPClient:   localenv.HTTPClient(),
		}
	case config.ModeAWS:
		awsCfg, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRegion(cfg.Region))
		if err != nil {
			return fmt.Errorf("aws config: %w", err)
		}
		b.DynamoDB = dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) {
			// DynamoDB-compatible servers may send no x-amz-crc32.
			o.DisableValidateResponseChecksum = getenv("AWS_ENDPOINT_URL") != "" || getenv("AWS_ENDPOINT_URL_DYNAMODB") != ""
		})
		b.S3 = s3.NewFromConfig(awsCfg, func(o *s3.Options) {
			if getenv("AWS_ENDPOINT_URL") != "" || getenv("AWS_ENDPOINT_URL_S3") != "" {
				// An S3-compatible server: path-style addressing, and no
				// aws-chunked uploads, which some store verbatim.
				o.UsePathStyle = true
				o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
				o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
			}
		})
		b.Bucket = cfg.Bucket
		if err := dynamo.CheckTables(ctx, b.DynamoDB, tables); err != nil {
			return fmt.Errorf("start-up check failed:\n%w", err)
		}
		if err := photo.CheckBucket(ctx, b.S3, b.Bucket); err != nil {
			return fmt.Errorf("start-up check failed:\n%w", err)
		}
		b.Provider = auth.Provider{
			Issuer:       cfg.OIDCIssuer,
			ClientID:     cfg.OIDCClientID,
			ClientSecret: cfg.OIDCClientSecret,
			RedirectURL:  cfg.BaseURL + "/auth/callback",
		}
	}

	app, err := server.Build(ctx, cfg, b, log, time.Now)
	if err != nil {
		return err
	}
	defer app.HEIC.Close()
	// However run ends (a signal, a failed listener, a shutdown that timed
	// out on a long export), the background work (account deletions, the
	// monitor's jobs) stops before the HEIC worker and the local backends
	// close: defers run last-registered first.
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := app.Close(cctx); err != nil {
			log.Error("background work did not stop in time", "err", err)
		}
	}()
	// Account deletions a stop interrupted go on where their users rows
	// say (DESIGN.md, account deletion).
	if n, err := app.Deletions.ResumeAll(ctx); err != nil {
		log.Error("account deletions not resumed", "err", err)
	} else if n > 0 {
		log.Info("account deletions resumed", "count", n)
	}
	var demoRes *demo.Result
	if cfg.Demo {
		fmt.Fprintf(stdout, "Demo mode: seeding the demo diary unless this data dir has it (the first time takes about half a minute)…\n")
		demoRes, err = demo.Seed(ctx, demo.Deps{
			Users: app.Users, Meals: app.Meals, Shares: app.Shares,
			Photos: photo.NewStore(b.S3, b.Bucket), Pipeline: app.Pipeline, Now: time.Now,
		}, demo.Options{OwnerID: localenv.Subject(demo.Email)})
		if err != nil {
			return err
		}
		log.Info("demo diary", "seeded", demoRes.Seeded, "meals", demoRes.Meals)
	}
	srv := &http.Server{
		Handler:           app.Handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       2 * time.Minute, // photo uploads over slow phone networks
		WriteTimeout:      2 * time.Minute,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()

	if cfg.Mode == config.ModeLocal {
		fmt.Fprintf(stdout, "\nndiro is running in local mode. Open %s\nSign in as %s (admin), or any email once you have an invite link.\nData is kept in %s. Stop with Ctrl-C.\n\n", cfg.BaseURL, cfg.AdminEmails[0], cfg.DataDir)
		if demoRes != nil {
			fmt.Fprintf(stdout, "Demo: sign in as %s to see six weeks of meals.\nThe demo's share link (what a dietitian sees): %s/s/%s\n\n", demo.Email, cfg.BaseURL, demoRes.ShareToken)
		}
	}
	log.Info("listening", "addr", ln.Addr().String(), "mode", string(cfg.Mode))

	select {
	case err := <-serveErr:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		// Requests still running (a long export) lose their connections
		// and their contexts end; a handler finishing a write past that
		// (the few that do, in milliseconds) is not waited for.
		srv.Close()
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// logPhotoRepair logs what the start-up photo check found and repaired:
// counts, the deleted objects' keys, the cleared meals as user ID and
// sort key (never an email), and the keys of objects written outside
// ndiro, which it leaves.
func logPhotoRepair(log *slog.Logger, r *meal.PhotoReport) {
	if r.Clean() {
		log.Info("photo check found meals and photos agreeing", "meals", r.Meals, "objects", r.Objects)
		return
	}
	cleared := make([]string, len(r.Missing))
	for i, m := range r.Missing {
		cleared[i] = m.UserID + " " + m.SK
	}
	log.Warn("photo check repaired meals and photos", "meals", r.Meals, "objects", r.Objects,
		"orphans_deleted", len(r.Orphans), "orphan_keys", r.Orphans,
		"photos_cleared", len(r.Missing), "cleared_meals", cleared, "foreign_keys", r.Foreign)
}

// healthcheck GETs /healthz on addr (a 0.0.0.0 or [::] listener is asked on
// loopback) and returns an error unless the answer is 200 within 5 s.
func healthcheck(ctx context.Context, addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(host, port)+"/healthz", nil)
	if err != nil {
		return err
	}
	resp, err := (&http.Client{}).Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: /healthz answered %d", resp.StatusCode)
	}
	return nil
}
