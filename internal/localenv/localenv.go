// Package localenv runs ndiro's three backends in-process for local mode and
// tests: DynamoDB (minidyn), S3 (gofakes3) and a Google-like OIDC provider
// (mockoidc) with a small sign-in page. They are reached through the real
// AWS SDK and OIDC clients, so local mode runs the same code paths as AWS
// mode, but over connections in the process's memory (package memnet),
// never a port: nothing else on the machine can reach the storage, which
// checks no credential. The stand-in sign-in's browser pages are served
// by the app itself (Env.SignIn), to loopback clients only.
package localenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/oauth2-proxy/mockoidc"
	"github.com/truora/minidyn/server"
	bolt "go.etcd.io/bbolt"

	"ndiro/internal/dynamo"
	"ndiro/internal/memnet"
)

// Options configure Start.
type Options struct {
	// DataDir is where tables and photos persist across restarts and
	// crashes; "" keeps everything in memory (tests). Files:
	// dynamodb.json (snapshot), dynamodb.journal (writes since the
	// snapshot), s3.bolt (photos).
	DataDir string
	Tables  dynamo.Tables
	// Bucket is the S3 bucket to create if missing.
	Bucket string
	// FoldEvery is how many journaled DynamoDB writes trigger folding the
	// journal into a new snapshot, which bounds the journal's size and the
	// time replaying it takes at start. Zero means 10,000.
	FoldEvery int
	// ProbeEvery is how soon after storage refused a write (a full disk:
	// a failed journal write or fsync, a failed s3.bolt commit) a probe
	// first checks whether writes fit again; each probe that fails doubles
	// the pause, up to 15 times ProbeEvery and at most 30 s. Zero means
	// 2 s (then 4, 8, 16, 30 s).
	ProbeEvery time.Duration
	Logger     *slog.Logger
	// DynamoOptions are applied to the DynamoDB client after the local
	// settings (tests add an SDK middleware that counts calls).
	DynamoOptions []func(*dynamodb.Options)
	// S3Options are applied to the S3 client after the local settings
	// (tests inject failures).
	S3Options []func(*s3.Options)
	// SignInOrigin, if set, starts the stand-in sign-in for the app at
	// that origin (config.Config.BaseURL, e.g. "http://127.0.0.1:8080"):
	// its issuer is SignInOrigin + SignInPath, where the app serves
	// Env.SignIn. Empty leaves it out (Env.OIDC is nil): server mode signs
	// people in through a real provider, and nothing in the process may
	// answer as one.
	SignInOrigin string
	// DynamoEndpoint, if set, is the http:// URL of another
	// DynamoDB-compatible server to use instead of the in-process emulator
	// (tests run against dynalite this way). Nothing is persisted then;
	// the tables must have a fresh prefix.
	DynamoEndpoint string
	// ObserveSync, if set, is told how long each fsync of the DynamoDB
	// journal took, failed or not (metrics.Metrics.ObserveSync).
	ObserveSync func(time.Duration)

	// syncFile makes a journal write durable; nil is (*os.File).Sync.
	// Tests hold or fail it.
	syncFile func(*os.File) error
	// writeFile writes the journal's and the snapshot's bytes; nil is
	// (*os.File).Write. Tests fill the disk with it.
	writeFile func(*os.File, []byte) (int, error)
}

// Env is a running set of local backends. Close it to persist and stop.
type Env struct {
	// DynamoDB and S3 are SDK clients configured for the emulators.
	DynamoDB *dynamodb.Client
	S3       *s3.Client
	// DynamoEndpoint and S3Endpoint reach the emulators, in the process
	// (or Options.DynamoEndpoint over the network), for tests that build
	// their own clients (NewDynamoClient, NewS3Client).
	DynamoEndpoint Endpoint
	S3Endpoint     Endpoint
	// OIDC is the mock Google: Issuer(), ClientID and ClientSecret configure
	// the app's sign-in, through SignInClient. Nil without
	// Options.SignInOrigin.
	OIDC *mockoidc.MockOIDC
	// SignIn is the stand-in's handler for browsers (its sign-in page and
	// the provider's endpoints), whose GETs the app serves under
	// SignInPath: it answers this machine's browsers only (403 otherwise).
	// Nil without Options.SignInOrigin.
	SignIn http.Handler
	// signIn is the sign-in page in front of OIDC; signInLn the
	// stand-in's own listener, which SignInClient dials.
	signIn   *signInPage
	signInLn *memnet.Listener
	persist  *persister
	servers  []*http.Server
	bolt     *bolt.DB
	s3       *stableBolt // nil without a data dir
	log      *slog.Logger
}

// WriteHealth returns nil while local storage takes writes, and otherwise
// why it refuses them, wrapping storage.ErrFull (the disk is full) or
// storage.ErrFailed (it cannot be written otherwise): the DynamoDB
// journal or s3.bolt failed a write, and every write since has been
// refused (with the same error, as an API error the SDK does not retry)
// until a probe (Options.ProbeEvery) finds room again. Reads are served
// throughout. Without a data dir it is always nil. It is safe for
// concurrent use and cheap: the server calls it before every unsafe
// request to refuse it early, and a readiness check may report it.
func (e *Env) WriteHealth() error {
	var errs []error
	if e.persist != nil {
		errs = append(errs, e.persist.health())
	}
	if e.s3 != nil {
		errs = append(errs, e.s3.health())
	}
	return errors.Join(errs...)
}

// Start starts the three backends, restores persisted tables from
// opts.DataDir (snapshot, then journal), creates missing tables and the
// bucket, and returns clients for them. From then on every DynamoDB write
// is journaled and fsynced before it is acknowledged, and a write storage
// cannot take is refused whole (WriteHealth). A damaged snapshot, or a
// journal damaged anywhere but in a torn final record, stops it with an
// error naming the file (and byte offset); a full disk does not: it
// starts with writes refused. On error everything started so far is
// stopped.
func Start(ctx context.Context, opts Options) (_ *Env, err error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.FoldEvery <= 0 {
		opts.FoldEvery = 10_000
	}
	if opts.ProbeEvery <= 0 {
		opts.ProbeEvery = 2 * time.Second
	}
	if opts.syncFile == nil {
		opts.syncFile = (*os.File).Sync
	}
	if observe, sync := opts.ObserveSync, opts.syncFile; observe != nil {
		opts.syncFile = func(f *os.File) error {
			start := time.Now()
			err := sync(f)
			observe(time.Since(start))
			return err
		}
	}
	if opts.writeFile == nil {
		opts.writeFile = (*os.File).Write
	}
	e := &Env{log: opts.Logger}
	defer func() {
		if err != nil {
			e.stop()
		}
	}()

	if opts.DataDir != "" {
		if err := os.MkdirAll(opts.DataDir, 0o700); err != nil {
			return nil, fmt.Errorf("localenv: data dir %s (NDIRO_DATA_DIR): %w", opts.DataDir, err)
		}
		// s3.bolt first: its file lock keeps a second ndiro off the data
		// dir before it reads, let alone folds, the running one's journal.
		e.bolt, err = bolt.Open(filepath.Join(opts.DataDir, "s3.bolt"), 0o600, &bolt.Options{Timeout: time.Second})
		if err != nil {
			return nil, fmt.Errorf("localenv: open s3.bolt in %s (NDIRO_DATA_DIR; is another ndiro running on it?): %w", opts.DataDir, err)
		}
	}

	// DynamoDB.
	if opts.DynamoEndpoint != "" {
		e.DynamoEndpoint = Endpoint{URL: opts.DynamoEndpoint}
	} else {
		// The emulator behind the partition router: a Query costs what it
		// reads (partitioned), then the journal in front when persisting.
		var ddbHandler http.Handler = newPartitioned(server.NewServer())
		if opts.DataDir != "" {
			e.persist = newPersister(ddbHandler, persistOptions{dir: opts.DataDir, tables: opts.Tables, foldEvery: opts.FoldEvery,
				probeEvery: opts.ProbeEvery, sync: opts.syncFile, writeFile: opts.writeFile, log: opts.Logger})
			ddbHandler = e.persist
		}
		e.DynamoEndpoint = e.serve(dynamoHost, ddbHandler)
	}
	e.DynamoDB = NewDynamoClient(e.DynamoEndpoint, opts.DynamoOptions...)
	if err := dynamo.CreateTables(ctx, e.DynamoDB, opts.Tables); err != nil {
		return nil, fmt.Errorf("localenv: %w", err)
	}
	if e.persist != nil {
		if err := e.persist.open(); err != nil {
			return nil, err
		}
	}

	// S3.
	var backend gofakes3.Backend
	if e.bolt != nil {
		e.s3 = newStableBolt(e.bolt, opts.ProbeEvery, opts.Logger)
		backend = e.s3
	} else {
		backend = s3mem.New()
	}
	if ok, err := backend.BucketExists(opts.Bucket); err != nil {
		return nil, fmt.Errorf("localenv: bucket %s: %w", opts.Bucket, err)
	} else if !ok {
		if err := backend.CreateBucket(opts.Bucket); err != nil {
			return nil, fmt.Errorf("localenv: create bucket %s: %w", opts.Bucket, err)
		}
	}
	e.S3Endpoint = e.serve(s3Host, storageStatus(gofakes3.New(backend).Server()))
	e.S3 = NewS3Client(e.S3Endpoint, opts.S3Options...)

	// Google.
	if opts.SignInOrigin != "" {
		if err := e.startOIDC(opts.SignInOrigin); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// The host names the emulators' Endpoint URLs carry: names on no
// network (RFC 2606's .invalid), which only Endpoint.Dial reaches.
const (
	dynamoHost = "dynamodb.localenv.invalid"
	s3Host     = "s3.localenv.invalid"
)

// Endpoint is where a client reaches one backend: URL, its base URL, and
// Dial, which connects to it inside the process (nil: over the network,
// for another server such as dynalite). The emulators' URLs name hosts
// on no network; only Dial reaches them.
type Endpoint struct {
	URL  string
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// serve starts h on an in-memory listener (package memnet) and returns
// the Endpoint that reaches it as http://host.
func (e *Env) serve(host string, h http.Handler) Endpoint {
	ln := memnet.Listen(host)
	// The emulators' own complaints (minidyn writes a second header when
	// a client went away mid-answer) go to the log, as the app server's do.
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(e.log.Handler(), slog.LevelWarn)}
	e.servers = append(e.servers, srv)
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			e.log.Error("local backend stopped", "err", err)
		}
	}()
	return Endpoint{URL: "http://" + host, Dial: ln.DialContext}
}

// Close stops every backend, then folds the journal into a last snapshot
// and releases the data files. It returns the first error met.
func (e *Env) Close() error {
	return e.stop()
}

// stop closes the servers, then the DynamoDB persistence (folding only if
// it opened; a write still running is journaled first) and the S3 data
// file.
func (e *Env) stop() error {
	var first error
	// Close, not Shutdown: callers stop the app before its backends, so no
	// request is in flight, and Shutdown would wait up to 5 s for any
	// connection a client dialled but never used (concurrent SDK calls
	// leave some).
	for _, s := range e.servers {
		if err := s.Close(); err != nil && first == nil {
			first = err
		}
	}
	e.servers = nil
	if e.persist != nil {
		if err := e.persist.close(); err != nil && first == nil {
			first = err
		}
		e.persist = nil
	}
	if e.OIDC != nil && e.OIDC.Server != nil {
		if err := e.OIDC.Server.Close(); err != nil && first == nil {
			first = err
		}
		e.OIDC = nil
	}
	if e.s3 != nil {
		e.s3.close()
	}
	if e.bolt != nil {
		if err := e.bolt.Close(); err != nil && first == nil {
			first = err
		}
		e.bolt = nil
	}
	return first
}

// localCredentials are accepted by both emulators, which check no signature.
var localCredentials = credentials.NewStaticCredentialsProvider("local", "local", "")

// IdleConnTimeout is how long the clients of the in-process emulators
// keep an idle keep-alive connection (the SDK's default is 90 s). Each
// holds several goroutines in this one process, and dialling again costs
// next to nothing, so a burst of load leaves nothing behind for long
// (make load counts goroutines after it).
const IdleConnTimeout = 5 * time.Second

// localHTTPClient is the SDK's default HTTP client with IdleConnTimeout,
// connecting with dial (nil: over the network, through no proxy either
// way: the emulators' host names exist nowhere else) and sending request
// bodies as plain readers (see plainBodies).
func localHTTPClient(dial func(ctx context.Context, network, addr string) (net.Conn, error)) plainBodies {
	return plainBodies{awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
		t.IdleConnTimeout = IdleConnTimeout
		t.Proxy = nil
		if dial != nil {
			t.DialContext = dial
		}
	})}
}

// plainBodies hides the io.WriterTo of a request body from net/http.
// The SDK closes the body as soon as Do returns, which can be before the
// transport's writer has made its last read of the body (the check for
// bytes past Content-Length); the SDK's body then answers that read, when
// made through WriteTo, with io.EOF as an error, and the transport closes
// the connection while the caller is still reading the response: "use of
// closed network connection" on a 200. Through Read the same late read
// is a clean end of body.
type plainBodies struct{ *awshttp.BuildableClient }

func (c plainBodies) Do(r *http.Request) (*http.Response, error) {
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = struct{ io.ReadCloser }{r.Body}
	}
	return c.BuildableClient.Do(r)
}

// NewDynamoClient returns a DynamoDB client for an emulator at endpoint
// (Env.DynamoEndpoint, or Endpoint{URL: …} for one on the network). The
// configuration is built by hand, not from the ambient AWS environment, so
// AWS_* variables (AWS_CA_BUNDLE among them) cannot change local behaviour.
func NewDynamoClient(endpoint Endpoint, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	cfg := aws.Config{Region: "local", Credentials: localCredentials}
	return dynamodb.NewFromConfig(cfg, append([]func(*dynamodb.Options){func(o *dynamodb.Options) {
		o.HTTPClient = localHTTPClient(endpoint.Dial)
		o.BaseEndpoint = aws.String(endpoint.URL)
		// minidyn sends no x-amz-crc32 header.
		o.DisableValidateResponseChecksum = true
	}}, optFns...)...)
}

// NewS3Client returns an S3 client for gofakes3 at endpoint (Env.S3Endpoint,
// or Endpoint{URL: …} for one on the network): path-style
// addressing, and checksums only when required, because with the SDK's
// default the upload is sent aws-chunked, which gofakes3 does not decode:
// it would store the chunk framing inside the object, silently.
// Further options (tests count calls) apply after these.
func NewS3Client(endpoint Endpoint, optFns ...func(*s3.Options)) *s3.Client {
	cfg := aws.Config{Region: "us-east-1", Credentials: localCredentials}
	return s3.NewFromConfig(cfg, append([]func(*s3.Options){func(o *s3.Options) {
		o.HTTPClient = localHTTPClient(endpoint.Dial)
		o.BaseEndpoint = aws.String(endpoint.URL)
		o.UsePathStyle = true
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	}}, optFns...)...)
}
