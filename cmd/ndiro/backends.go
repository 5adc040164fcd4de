package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"ndiro/internal/auth"
	"ndiro/internal/config"
	"ndiro/internal/dynamo"
	"ndiro/internal/lease"
	"ndiro/internal/localenv"
	"ndiro/internal/meal"
	"ndiro/internal/photo"
	"ndiro/internal/server"
	"ndiro/internal/storage"
	"ndiro/internal/user"
)

// localBucket is the S3 bucket local mode keeps photos in.
const localBucket = "ndiro-photos"

// backends opens the clients the app runs on: AWS (checked at start) or
// the embedded ones of local and server mode. Either way every call they
// make is bounded by NDIRO_STORAGE_* (package storage) and counted,
// outside those bounds, in the metrics (metrics.Metrics.DynamoDB and S3).
func (m *Main) backends(ctx context.Context) (server.Backends, error) {
	tables := dynamo.NewTables(m.cfg.TablePrefix)
	bounds := storage.New(m.cfg.Storage, m.log, time.Now)
	if m.cfg.Mode == config.ModeAWS {
		return m.awsBackends(ctx, tables, bounds)
	}
	return m.localBackends(ctx, tables, bounds)
}

// localBackends starts the embedded DynamoDB and S3 on NDIRO_DATA_DIR
// (reached inside the process, on no port), repairs what a crash between
// a photo and its meal left, and sweeps expired pending uploads. Local
// mode signs in through the stand-in, which the app serves on its own
// listener (localenv.SignInPath); server mode starts none and signs in
// through the configured provider (provider), as AWS mode does.
func (m *Main) localBackends(ctx context.Context, tables dynamo.Tables, bounds *storage.Bounds) (server.Backends, error) {
	standIn := m.cfg.Mode == config.ModeLocal
	signIn := "" // server mode: none
	if standIn {
		signIn = m.cfg.BaseURL
	}
	loaded := m.roomForTables()
	env, err := localenv.Start(ctx, localenv.Options{
		DataDir: m.cfg.DataDir, Tables: tables, Bucket: localBucket, Logger: m.log,
		DynamoOptions: []func(*dynamodb.Options){bounds.DynamoDB, m.metrics.DynamoDB},
		S3Options:     []func(*s3.Options){bounds.S3, m.metrics.S3},
		ObserveSync:   m.metrics.ObserveSync,
		SignInOrigin:  signIn,
	})
	if err != nil {
		return server.Backends{}, err
	}
	loaded()
	m.onClose(func() {
		if err := env.Close(); err != nil {
			m.log.Error("local backends did not stop cleanly", "err", err)
		}
	})
	photos := photo.NewStore(env.S3, localBucket)
	m.repairPhotos(ctx, meal.NewStore(env.DynamoDB, tables.Meals.Name), photos)
	// Uploads kept for a form being corrected live a day; in AWS a
	// lifecycle rule expires them (deploy/terraform), here this does.
	if n, err := photos.SweepPending(ctx, time.Now()); err != nil {
		m.log.Error("pending uploads not swept", "err", err)
	} else if n > 0 {
		m.log.Info("pending uploads swept", "objects", n)
	}
	b := server.Backends{
		DynamoDB: env.DynamoDB, S3: env.S3, Bucket: localBucket, Tables: tables,
		WriteHealth: env.WriteHealth, // a full disk: writes refused early (507)
		Metrics:     m.metrics,
		Provider:    m.provider(),
	}
	if standIn {
		b.Provider = auth.Provider{
			Issuer:       env.OIDC.Issuer(),
			ClientID:     env.OIDC.ClientID,
			ClientSecret: env.OIDC.ClientSecret,
			RedirectURL:  m.cfg.BaseURL + "/auth/callback",
			HTTPClient:   env.SignInClient(),
		}
		b.SignIn = env.SignIn
	}
	return b, nil
}

// provider is the sign-in provider of server and AWS mode:
// NDIRO_OIDC_ISSUER and its client, with the callback on NDIRO_BASE_URL.
func (m *Main) provider() auth.Provider {
	return auth.Provider{
		Issuer:       m.cfg.OIDCIssuer,
		ClientID:     m.cfg.OIDCClientID,
		ClientSecret: m.cfg.OIDCClientSecret,
		RedirectURL:  m.cfg.BaseURL + "/auth/callback",
	}
}

// repairPhotos removes the objects a crash between a photo's objects and
// its meal row left without a row, and clears any photo whose objects
// are gone, before serving; it logs counts, the deleted objects' keys,
// the cleared meals as user ID and sort key (never an email), and the
// keys of objects written outside ndiro, which it leaves.
func (m *Main) repairPhotos(ctx context.Context, meals *meal.Store, photos *photo.Store) {
	r, err := meal.RepairPhotos(ctx, meals, photos)
	if err != nil {
		m.log.Error("photo check failed", "err", err)
		return
	}
	if r.Clean() {
		m.log.Info("photo check found meals and photos agreeing", "meals", r.Meals, "objects", r.Objects)
		return
	}
	cleared := make([]string, len(r.Missing))
	for i, mm := range r.Missing {
		cleared[i] = mm.UserID + " " + mm.SK
	}
	m.log.Warn("photo check repaired meals and photos", "meals", r.Meals, "objects", r.Objects,
		"orphans_deleted", len(r.Orphans), "orphan_keys", r.Orphans,
		"photos_cleared", len(r.Missing), "cleared_meals", cleared, "foreign_keys", r.Foreign)
}

// awsBackends builds the SDK clients from the AWS environment (region,
// credentials, AWS_ENDPOINT_URL_* for compatible servers) and checks that
// the tables and the bucket are there; a backend that does not answer
// within its budget stops start-up with a message naming it.
func (m *Main) awsBackends(ctx context.Context, tables dynamo.Tables, bounds *storage.Bounds) (server.Backends, error) {
	return m.awsStorage(ctx, tables, bounds, true)
}

// awsStorage is awsBackends; writer false takes no lease and gates no
// write (ndiro migrate --dry-run, which only reads).
func (m *Main) awsStorage(ctx context.Context, tables dynamo.Tables, bounds *storage.Bounds, writer bool) (server.Backends, error) {
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRegion(m.cfg.Region))
	if err != nil {
		return server.Backends{}, fmt.Errorf("aws config: %w", err)
	}
	b := server.Backends{Bucket: m.cfg.Bucket, Tables: tables, Metrics: m.metrics}
	// The lease's own client is the one without the write gate.
	leaseDB := dynamodb.NewFromConfig(awsCfg, m.dynamoCompat, bounds.DynamoDB, m.metrics.DynamoDB)
	if err := dynamo.CheckTables(ctx, leaseDB, tables); err != nil {
		return server.Backends{}, startupFailed(err, "DynamoDB", "AWS_REGION or AWS_ENDPOINT_URL_DYNAMODB")
	}
	gateDB, gateS3 := func(*dynamodb.Options) {}, func(*s3.Options) {}
	if writer {
		l, err := m.acquireLease(ctx, leaseDB, tables)
		if err != nil {
			return server.Backends{}, err
		}
		b.Lease = l // no lease: writes refused early (503)
		gateDB, gateS3 = l.DynamoDB, l.S3
	}
	b.DynamoDB = dynamodb.NewFromConfig(awsCfg, m.dynamoCompat, bounds.DynamoDB, m.metrics.DynamoDB, gateDB)
	b.S3 = s3.NewFromConfig(awsCfg, m.s3Compat, bounds.S3, m.metrics.S3, gateS3)
	if err := photo.CheckBucket(ctx, b.S3, b.Bucket); err != nil {
		return server.Backends{}, startupFailed(err, "S3", "AWS_REGION or AWS_ENDPOINT_URL_S3")
	}
	b.Provider = m.provider()
	return b, nil
}

// compatible reports whether the environment points service ("S3",
// "DYNAMODB") at a compatible server rather than AWS (AWS_ENDPOINT_URL,
// AWS_ENDPOINT_URL_<service>).
func (m *Main) compatible(service string) bool {
	return m.getenv("AWS_ENDPOINT_URL") != "" || m.getenv("AWS_ENDPOINT_URL_"+service) != ""
}

// dynamoCompat sets what a DynamoDB-compatible server needs: such
// servers may send no x-amz-crc32.
func (m *Main) dynamoCompat(o *dynamodb.Options) {
	o.DisableValidateResponseChecksum = m.compatible("DYNAMODB")
}

// s3Compat sets what an S3-compatible server needs: path-style
// addressing, and no aws-chunked uploads, which some store verbatim.
func (m *Main) s3Compat(o *s3.Options) {
	if m.compatible("S3") {
		o.UsePathStyle = true
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	}
}

// startupFailed is the error of a failed start-up check: one naming the
// backend (and the settings that point at it) when it did not answer
// within its budget, else the check's own lines.
func startupFailed(err error, backend, settings string) error {
	if errors.Is(err, storage.ErrUnavailable) {
		return fmt.Errorf("start-up check failed: %s did not answer (check %s, and that it is reachable from here):\n%w", backend, settings, err)
	}
	return fmt.Errorf("start-up check failed:\n%w", err)
}

// acquireLease takes the one-writer lease (package lease; deploy/README,
// one writer) on the users table, waiting out NDIRO_LEASE_TTL if an item
// is there, keeps it renewed until Close, and releases it at Close, after
// the app's background writers stopped. Another process renewing it is
// a start-up error naming that process and until when it renewed.
func (m *Main) acquireLease(ctx context.Context, db *dynamodb.Client, tables dynamo.Tables) (*lease.Lease, error) {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown host"
	}
	l, err := lease.New(lease.Dynamo{DB: db, Table: tables.Users.Name, PK: "user_id", Key: user.LeaseKey}, lease.Options{
		TTL: m.cfg.Lease.TTL, Renew: m.cfg.Lease.Renew, Guard: m.cfg.LeaseGuard(),
		Holder: fmt.Sprintf("%s pid %d%s", host, os.Getpid(), m.holderNote), Log: m.log,
	})
	if err != nil {
		return nil, err
	}
	m.log.Info("taking the writer lease", "ttl", m.cfg.Lease.TTL.String())
	if err := l.Acquire(ctx); err != nil {
		var held *lease.HeldError
		if errors.As(err, &held) {
			return nil, err
		}
		return nil, startupFailed(err, "DynamoDB", "AWS_REGION or AWS_ENDPOINT_URL_DYNAMODB")
	}
	m.log.Info("writer lease held", "counter", l.State().Counter)
	rctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.Run(rctx)
	}()
	m.onClose(func() {
		stop()
		<-done
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := l.Release(cctx); err != nil {
			m.log.Warn("writer lease not released; the next start waits NDIRO_LEASE_TTL for it", "err", err)
		} else {
			m.log.Info("writer lease released")
		}
	})
	return l, nil
}
