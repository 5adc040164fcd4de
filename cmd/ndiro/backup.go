package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"sort"
	"strings"
	"time"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	bolterrors "go.etcd.io/bbolt/errors"

	"ndiro/internal/account"
	"ndiro/internal/admin"
	"ndiro/internal/config"
	"ndiro/internal/dynamo"
	"ndiro/internal/limit"
	"ndiro/internal/localenv"
	"ndiro/internal/meal"
	"ndiro/internal/photo"
	"ndiro/internal/storage"
	"ndiro/internal/user"
)

// backupUsage is `ndiro backup --help`.
const backupUsage = `Usage: ndiro backup --to DIR|s3://BUCKET/PREFIX [--user ID] [--keep-days N] [--dry-run]

Writes every account's export archive (docs/EXPORT-FORMAT.md, the zip a
person downloads from their account page) to DIR or to the S3 prefix, one
per account and day: {user ID, escaped}/{YYYY-MM-DD}.zip (a long ID's
folder is its start and a digest, at most 255 bytes), each written
whole or not at all (a temporary file renamed; an S3 multipart upload
completed). Accounts being deleted are skipped. Reads are paced to 5 % of
the tables' read capacity, like the admin monitor's.

Then it applies the retention: archives older than --keep-days are
removed, and so is every archive of an account that no longer exists or
is being deleted, so a restore from the backups brings back nothing of a
deleted account once a run has passed (deploy/README.md, Backups).

The settings are ndiro's own, from the environment: in AWS mode
(NDIRO_MODE=aws) the tables and bucket it serves, read only (it takes no
writer lease and may run beside the serving ndiro); in local and server
mode NDIRO_DATA_DIR, which it refuses while an ndiro runs on it. An s3://
destination is reached with the AWS settings of the environment.

Flags:
`

// backupFlags are the flags of `ndiro backup`.
type backupFlags struct {
	to       string
	user     string
	keepDays int
	dryRun   bool
}

// parseBackupFlags parses args; flag.ErrHelp after printing the usage to
// out for --help.
func parseBackupFlags(args []string, out io.Writer) (backupFlags, error) {
	var f backupFlags
	fs := flag.NewFlagSet("ndiro backup", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&f.to, "to", "", "where to write: a directory, or s3://bucket/prefix")
	fs.StringVar(&f.user, "user", "", "back up this user ID only (no retention for other accounts)")
	fs.IntVar(&f.keepDays, "keep-days", 30, "remove an account's archives older than this many days (at least 1)")
	fs.BoolVar(&f.dryRun, "dry-run", false, "read and say what would be written and removed; write and remove nothing")
	fs.Usage = func() {
		fmt.Fprint(out, backupUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	switch {
	case fs.NArg() > 0:
		return f, fmt.Errorf("ndiro backup: unexpected argument %q (see ndiro backup --help)", fs.Arg(0))
	case f.to == "":
		return f, errors.New("ndiro backup: --to is required: a directory, or s3://bucket/prefix (see ndiro backup --help)")
	case f.keepDays < 1:
		return f, fmt.Errorf("ndiro backup: --keep-days is %d; it must be at least 1", f.keepDays)
	}
	return f, nil
}

// backup runs `ndiro backup` (backupUsage).
func backup(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	f, err := parseBackupFlags(args, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		return err
	}
	log := newLogger(cfg, stdout)
	src, closeSrc, err := openBackupSource(ctx, cfg, getenv, log)
	if err != nil {
		return err
	}
	defer closeSrc()
	dst, err := openTarget(ctx, f.to, cfg, getenv)
	if err != nil {
		return err
	}
	b := &backupRun{flags: f, src: src, dst: dst, log: log, now: time.Now().UTC(),
		pace: limit.NewPacer(admin.ReadUnitsPerSecond, admin.ReadUnitsBurst, limit.SystemClock{}).Wait}
	return b.run(ctx)
}

// backupSource is what a backup reads: the stores of ndiro's tables and
// bucket.
type backupSource struct {
	users  *user.Store
	meals  *meal.Store
	photos *photo.Store
}

// openBackupSource opens the tables and bucket of cfg's mode for reading:
// AWS mode's, checked as a start does but without the writer lease (a
// backup writes nothing there), or the data dir's of local and server
// mode, whose lock refuses the backup while an ndiro runs on it.
func openBackupSource(ctx context.Context, cfg config.Config, getenv func(string) string, log *slog.Logger) (backupSource, func(), error) {
	tables := dynamo.NewTables(cfg.TablePrefix)
	bounds := storage.New(cfg.Storage, log, time.Now)
	if cfg.Mode == config.ModeAWS {
		m := &Main{cfg: cfg, getenv: getenv}
		awsCfg, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRegion(cfg.Region))
		if err != nil {
			return backupSource{}, nil, fmt.Errorf("aws config: %w", err)
		}
		db := dynamodb.NewFromConfig(awsCfg, m.dynamoCompat, bounds.DynamoDB)
		if err := dynamo.CheckTables(ctx, db, tables); err != nil {
			return backupSource{}, nil, startupFailed(err, "DynamoDB", "AWS_REGION or AWS_ENDPOINT_URL_DYNAMODB")
		}
		s3c := s3.NewFromConfig(awsCfg, m.s3Compat, bounds.S3)
		if err := photo.CheckBucket(ctx, s3c, cfg.Bucket); err != nil {
			return backupSource{}, nil, startupFailed(err, "S3", "AWS_REGION or AWS_ENDPOINT_URL_S3")
		}
		return newBackupSource(db, s3c, tables, cfg.Bucket), func() {}, nil
	}
	if _, err := os.Stat(cfg.DataDir + "/s3.bolt"); err != nil {
		return backupSource{}, nil, fmt.Errorf("ndiro backup: no ndiro data in %s (NDIRO_DATA_DIR): %w", cfg.DataDir, err)
	}
	env, err := localenv.Start(ctx, localenv.Options{
		DataDir: cfg.DataDir, Tables: tables, Bucket: localBucket, Logger: log,
		DynamoOptions: []func(*dynamodb.Options){bounds.DynamoDB},
		S3Options:     []func(*s3.Options){bounds.S3},
	})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return backupSource{}, nil, fmt.Errorf("ndiro backup: an ndiro is running on %s (NDIRO_DATA_DIR); stop it first: local mode's files have one process at a time", cfg.DataDir)
	}
	if err != nil {
		return backupSource{}, nil, err
	}
	closeEnv := func() {
		if err := env.Close(); err != nil {
			log.Error("local backends did not stop cleanly", "err", err)
		}
	}
	return newBackupSource(env.DynamoDB, env.S3, tables, localBucket), closeEnv, nil
}

func newBackupSource(db *dynamodb.Client, s3c *s3.Client, tables dynamo.Tables, bucket string) backupSource {
	return backupSource{
		users:  user.NewStore(db, tables.Users.Name, time.Now),
		meals:  meal.NewStore(db, tables.Meals.Name),
		photos: photo.NewStore(s3c, bucket),
	}
}

// backupRun is one run of `ndiro backup`.
type backupRun struct {
	flags backupFlags
	src   backupSource
	dst   target
	log   *slog.Logger
	now   time.Time
	pace  dynamo.Pace
}

// archiveSuffix ends every archive name a backup writes:
// "{folderName(user ID)}/2026-09-01.zip".
const archiveSuffix = ".zip"

// run backs up every account (or the one of --user), then applies the
// retention. A failed account is logged and counted, the others go on;
// the run then fails naming how many failed, and removes nothing.
func (b *backupRun) run(ctx context.Context) error {
	users, err := b.src.users.ListPaced(ctx, b.pace)
	if err != nil {
		return fmt.Errorf("ndiro backup: list users: %w", err)
	}
	kept := map[string]bool{} // folders of the accounts whose archives stay
	failed, found := 0, false
	ex := account.Exporter{Meals: b.src.meals, Photos: b.src.photos, Now: func() time.Time { return b.now }, Log: b.log, Pace: b.pace}
	for i := range users {
		u := &users[i]
		if b.flags.user != "" && u.ID != b.flags.user {
			continue
		}
		found = true
		if u.Deleting() {
			b.log.Info("backup skipped an account being deleted", "user_id", u.ID)
			continue
		}
		kept[folderName(u.ID)] = true
		name := folderName(u.ID) + "/" + b.now.Format(time.DateOnly) + archiveSuffix
		if b.flags.dryRun {
			meals, err := b.src.meals.AllPaced(ctx, u.ID, b.pace)
			if err != nil {
				return fmt.Errorf("ndiro backup: user %s: %w", u.ID, err)
			}
			b.log.Info("backup would write", "user_id", u.ID, "file", name, "meals", len(meals), "dry_run", true)
			continue
		}
		var n int64
		err := b.dst.put(ctx, name, func(w io.Writer) error {
			cw := &countingWriter{w: w}
			err := ex.Write(ctx, cw, u)
			n = cw.n
			return err
		})
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			failed++
			b.log.Error("backup of an account failed", "user_id", u.ID, "err", err)
			continue
		}
		b.log.Info("backup written", "user_id", u.ID, "file", name, "bytes", n)
	}
	if b.flags.user != "" && !found {
		return fmt.Errorf("ndiro backup: no user %q", b.flags.user)
	}
	if failed > 0 {
		return fmt.Errorf("ndiro backup: %d of the accounts failed (see the log); nothing was removed", failed)
	}
	return b.retain(ctx, kept)
}

// retain removes the archives the retention no longer keeps: those older
// than --keep-days of the accounts whose folders are in kept, and every
// archive in a folder not in kept (the account is gone or being
// deleted). With --user, only that account's folder is looked at. Names
// the backup did not write (no folderName, no date) are left alone.
func (b *backupRun) retain(ctx context.Context, kept map[string]bool) error {
	all, err := b.dst.list(ctx)
	if err != nil {
		return fmt.Errorf("ndiro backup: list %s: %w", b.flags.to, err)
	}
	oldest := b.now.AddDate(0, 0, -b.flags.keepDays).Format(time.DateOnly)
	var remove []string
	for _, name := range all {
		dir, file, ok := strings.Cut(name, "/")
		if !ok || strings.Contains(file, "/") || !strings.HasSuffix(file, archiveSuffix) {
			continue
		}
		day := strings.TrimSuffix(file, archiveSuffix)
		if _, err := time.Parse(time.DateOnly, day); err != nil || !isFolderName(dir) {
			continue
		}
		if b.flags.user != "" && dir != folderName(b.flags.user) {
			continue
		}
		if !kept[dir] || day < oldest {
			remove = append(remove, name)
		}
	}
	sort.Strings(remove)
	for _, name := range remove {
		if b.flags.dryRun {
			b.log.Info("backup would remove", "file", name, "dry_run", true)
			continue
		}
		if err := b.dst.remove(ctx, name); err != nil {
			return fmt.Errorf("ndiro backup: remove %s: %w", name, err)
		}
		b.log.Info("backup removed", "file", name)
	}
	return nil
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// maxFolderName is the longest folder name folderName returns: the
// longest file name Linux file systems (ext4, XFS, btrfs, ZFS) take.
const maxFolderName = 255

// hashMark separates the kept start of a long escaped ID from its
// digest; escapeID never writes it.
const hashMark = "~"

// folderName is the folder of user ID id's archives: escapeID(id) when
// that is at most maxFolderName bytes, else its start (cut before an
// escape, never inside one), hashMark and the hex SHA-256 of id, so two
// IDs sharing a long start still get folders of their own.
func folderName(id string) string {
	name := escapeID(id)
	if len(name) <= maxFolderName {
		return name
	}
	sum := sha256.Sum256([]byte(id))
	digest := hashMark + hex.EncodeToString(sum[:])
	cut := maxFolderName - len(digest)
	if i := strings.LastIndexByte(name[:cut], '%'); i >= cut-2 {
		cut = i
	}
	return name[:cut] + digest
}

// isFolderName reports whether name is a folder folderName writes for
// some ID: an escaped ID, or a long one's start and digest.
func isFolderName(name string) bool {
	if len(name) > maxFolderName {
		return false
	}
	start, digest, long := strings.Cut(name, hashMark)
	if !long {
		_, err := unescapeID(name)
		return err == nil
	}
	if len(name) < maxFolderName-2 || len(digest) != 2*sha256.Size || strings.ToLower(digest) != digest {
		return false
	}
	if _, err := hex.DecodeString(digest); err != nil {
		return false
	}
	_, err := url.PathUnescape(start)
	return err == nil
}

// escapeID makes a user ID (an OIDC subject: any string) one safe folder
// name: ASCII letters, digits, '-' and '_' as they are, every other byte
// as %XX (upper-case hex), so no ID becomes "..", a path or a name two
// IDs share; unescapeID reverses it.
func escapeID(id string) string {
	var b strings.Builder
	for i := 0; i < len(id); i++ {
		c := id[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

// unescapeID returns the user ID escapeID made name from, or an error if
// escapeID makes no name like it.
func unescapeID(name string) (string, error) {
	id, err := url.PathUnescape(name)
	if err != nil || id == "" || escapeID(id) != name {
		return "", fmt.Errorf("%q is not an escaped user ID", name)
	}
	return id, nil
}
