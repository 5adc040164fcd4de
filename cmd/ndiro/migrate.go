package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"ndiro/internal/config"
	"ndiro/internal/dynamo"
	"ndiro/internal/localenv"
	"ndiro/internal/migrate"
	"ndiro/internal/storage"
	"ndiro/internal/user"
)

// migrateUsage is what ndiro migrate --help prints before the flags.
const migrateUsage = `Usage: ndiro migrate --from-data-dir DIR [--dry-run] [--write-units N] [--read-units N]

Copies what a local (or server) mode ndiro keeps in its data dir
(NDIRO_DATA_DIR, ./var by default) into AWS mode's DynamoDB tables and S3
bucket, named by the settings the server uses in AWS mode (NDIRO_MODE=aws,
NDIRO_TABLE_PREFIX, NDIRO_BUCKET, AWS_REGION, credentials; see
deploy/README.md). Stop the local ndiro first: the data dir is only read,
never changed, and migrate refuses while an ndiro runs on it.

Copied: every account's users row, meals (with their comments), share
links and photos (every object under users/{id}/, sized copies included),
and every invite.
Not copied: sessions (everyone signs in again), the writer lease, accounts
being deleted (and the invites they made or used), the meal form's
idempotency claims, and uploads kept for a form being corrected (pending/).

An account local mode signed up is marked as waiting for its owner: its ID
is made from its email, not the provider's, so the first sign-in whose
provider vouches for the account's email (email_verified) moves the
account to that sign-in, if it comes within NDIRO_MOVE_MARK_DAYS (30 days
by default; an admin extends it on Admin > Users). An account from server
mode is not marked: its ID is its provider's subject, so its owner signs
in as before if AWS mode uses the same provider (NDIRO_OIDC_ISSUER). If it
does not, start AWS mode with the old provider first and mark the
accounts on Admin > Users, then change the provider.

Every write is conditional: a run killed midway can be run again, and a
second run copies nothing. Nothing already in the target is overwritten;
what differs is listed as a conflict. Migrate holds the writer lease while
it runs (or refuses, naming the process that holds it), so no ndiro
serves the tables meanwhile. At the end it verifies every copied account,
its counts and a SHA-256 over its rows and its photos' bytes read back from
the target, prints a table, and exits with status 1 on any difference or
conflict.

Flags:
`

// migrateCommand runs ndiro migrate with args (after "migrate"), as
// migrateUsage says; the report goes to stdout, log lines to stderr.
func migrateCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dir := fs.String("from-data-dir", "", "the local ndiro's data dir (its NDIRO_DATA_DIR) to copy from; required")
	dry := fs.Bool("dry-run", false, "count what would be copied and write nothing (takes no lease)")
	writeUnits := fs.Float64("write-units", migrate.DefaultWriteUnits, "DynamoDB write units a second the copy may spend per table (deploy/terraform caps tables at 200)")
	readUnits := fs.Float64("read-units", migrate.DefaultReadUnits, "DynamoDB read units a second the copy and its verification may spend (the cap is 500)")
	usage := func(w io.Writer) {
		fmt.Fprint(w, migrateUsage)
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		usage(stdout)
		return nil
	} else if err != nil {
		return fmt.Errorf("ndiro migrate: %v (ndiro migrate --help lists the flags)", err)
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("ndiro migrate: unexpected argument %q (ndiro migrate --help lists the flags)", fs.Arg(0))
	case *dir == "":
		return errors.New("ndiro migrate needs --from-data-dir DIR, the local ndiro's NDIRO_DATA_DIR (ndiro migrate --help says more)")
	case *writeUnits < 1 || *writeUnits > migrate.MaxUnits:
		return fmt.Errorf("ndiro migrate: --write-units must be from 1 to %d, not %g", migrate.MaxUnits, *writeUnits)
	case *readUnits < 1 || *readUnits > migrate.MaxUnits:
		return fmt.Errorf("ndiro migrate: --read-units must be from 1 to %d, not %g", migrate.MaxUnits, *readUnits)
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		return err
	}
	if cfg.Mode != config.ModeAWS {
		return fmt.Errorf("ndiro migrate copies into AWS mode: run it with NDIRO_MODE=aws and the AWS mode settings the server uses (deploy/README.md), not NDIRO_MODE=%s", cfg.Mode)
	}

	// The source first: a data dir in use is refused before the lease.
	srcTables := dynamo.NewTables("source-")
	src, err := localenv.OpenReadOnly(ctx, localenv.Options{DataDir: *dir, Tables: srcTables, Bucket: localBucket})
	if err != nil {
		return err
	}
	defer src.Close()

	m := newMain(cfg, getenv, stderr)
	m.holderNote = " (ndiro migrate)"
	defer m.Close()
	tables := dynamo.NewTables(cfg.TablePrefix)
	b, err := m.awsStorage(ctx, tables, storage.New(cfg.Storage, m.log, time.Now), !*dry)
	if err != nil {
		return err
	}
	rep, err := migrate.Run(ctx,
		migrate.Side{DB: src.DynamoDB, S3: src.S3, Bucket: localBucket, Tables: srcTables},
		migrate.Side{DB: b.DynamoDB, S3: b.S3, Bucket: b.Bucket, Tables: tables},
		migrate.Options{DryRun: *dry, WriteUnits: *writeUnits, ReadUnits: *readUnits, Mark: markAwaitingOwner(b.DynamoDB, tables), MarkLifetime: cfg.MoveMarkLifetime, Progress: stdout})
	if err != nil {
		return fmt.Errorf("ndiro migrate stopped (run it again to go on where it stopped): %w", err)
	}
	if err := rep.Write(stdout); err != nil {
		return err
	}
	if !rep.OK() {
		return errors.New("ndiro migrate: the target does not equal the source for every account (see the table)")
	}
	return nil
}

// markAwaitingOwner marks a copied account as waiting for its owner,
// through the target's users store (user.Store.MarkAwaitingOwner).
func markAwaitingOwner(db *dynamodb.Client, tables dynamo.Tables) func(context.Context, string, time.Time, user.OwnerMark) error {
	return user.NewStore(db, tables.Users.Name, time.Now).MarkAwaitingOwner
}
