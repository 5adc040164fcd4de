// Package migrate copies what a local (or server) mode ndiro holds into
// AWS mode's tables and bucket: `ndiro migrate --from-data-dir DIR`
// (README, Moving from local mode to AWS). It copies every account's
// users row, meals (with their comments), share links and photo objects
// (every object under users/{id}/, sized copies included), and every
// invite; never sessions (the rows' sessions map), the lease, an
// account waiting for its own deletion (nor the invites it made or
// used, which its deletion removes), the meal form's idempotency
// claims (sort keys from meal.MealKeyCeiling up) or uploads kept for a
// form (pending/).
//
// Every write is conditional: an item is put only where none is
// (attribute_not_exists), and an object only where none with the same
// SHA-256 is, so a run can be killed at any point and run again, and a
// second run copies nothing. What is already in the target and differs
// is a conflict: listed, never overwritten. An account local mode
// signed up (its ID made from its email, localenv.Subject) is marked as
// waiting for its owner (Options.Mark) only once everything it owns is
// copied, so a run killed midway never leaves half an account a sign-in
// could claim. An account whose ID is a provider's subject (server
// mode) is not marked: its owner signs in with that subject again, and
// a mark would only let a later subject with its email take it. At the end each copied account is verified: its counts
// and a SHA-256 over its rows and its objects' bytes, read back from the
// target, must equal the source's.
//
// Target writes are paced to Options.WriteUnits write units a second and
// target reads to Options.ReadUnits read units, under the tables' caps
// (deploy/terraform: max_write_request_units 200, max_read_request_units
// 500 by default). The caller holds the one-writer lease for the run
// (package lease), so no ndiro serves the target meanwhile; the users
// and shares rows are written around their stores' caches, which only a
// running server holds.
package migrate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"ndiro/internal/dynamo"
	"ndiro/internal/limit"
	"ndiro/internal/localenv"
	"ndiro/internal/meal"
	"ndiro/internal/user"
)

// Side is one end of a migration: the four tables and the photo bucket,
// reached through SDK clients.
type Side struct {
	DB     *dynamodb.Client
	S3     *s3.Client
	Bucket string
	Tables dynamo.Tables
}

// Default paces: half of deploy/terraform's default caps per table, so
// a run never meets DynamoDB's throttling and leaves room for the
// start-up checks of a server started meanwhile.
const (
	DefaultWriteUnits = 100 // write units a second (max_write_request_units 200)
	DefaultReadUnits  = 250 // read units a second (max_read_request_units 500)
)

// MaxUnits is the most WriteUnits or ReadUnits may be: DynamoDB's
// default per-table on-demand limit, 40,000 units a second.
const MaxUnits = 40_000

// Options adjust Run.
type Options struct {
	// DryRun reads both sides and counts what a run would copy, what is
	// there already and what conflicts, and writes nothing.
	DryRun bool
	// WriteUnits and ReadUnits pace the target's writes and reads, in
	// units a second; 0 is DefaultWriteUnits and DefaultReadUnits.
	WriteUnits, ReadUnits float64
	// Mark marks a copied account as waiting for its owner
	// (user.Store.MarkAwaitingOwner on the target's users table); nil
	// marks nothing. It is called once the account is copied whole,
	// only for active accounts local mode signed up, with Now's time and
	// a mark by user.MarkedByMigrate for MarkLifetime, whose issuer is
	// LocalIssuer.
	Mark func(ctx context.Context, id string, now time.Time, m user.OwnerMark) error
	// MarkLifetime is how long a mark can be claimed
	// (config.Config.MoveMarkLifetime); more than 0 when Mark is set.
	MarkLifetime time.Duration
	// Now is the time of the marks; nil is time.Now.
	Now func() time.Time
	// Clock paces (limit.Clock); nil is the wall clock.
	Clock limit.Clock
	// Progress, if set, gets a line as each account is done.
	Progress io.Writer
	// ObjectWorkers is how many photo objects are copied at once; 0 is 4.
	ObjectWorkers int
}

// Check returns an error saying what to change if o's paces are out of
// range: more than 0 and at most MaxUnits (0 meaning the default).
func (o Options) Check() error {
	if o.WriteUnits < 0 || o.WriteUnits > MaxUnits {
		return fmt.Errorf("write units must be from 1 to %d a second, not %g", MaxUnits, o.WriteUnits)
	}
	if o.ReadUnits < 0 || o.ReadUnits > MaxUnits {
		return fmt.Errorf("read units must be from 1 to %d a second, not %g", MaxUnits, o.ReadUnits)
	}
	if o.Mark != nil && o.MarkLifetime <= 0 {
		return fmt.Errorf("a mark's lifetime must be more than 0, not %v", o.MarkLifetime)
	}
	return nil
}

// LocalIssuer is the issuer a mark records for an account local mode
// signed up whose row does not record its own (rows written before rows
// recorded it): the stand-in sign-in, which no provider is, so any
// provider's subject may claim the account.
const LocalIssuer = "ndiro local mode"

// Counts are what happened to the items (or objects) of one kind: put
// into the target (in a dry run: would be), found there already with the
// same content, or found there with other content (left as it is).
type Counts struct {
	Copied, Same, Conflicts int
}

func (c *Counts) add(o outcome) {
	switch o {
	case copied:
		c.Copied++
	case same:
		c.Same++
	default:
		c.Conflicts++
	}
}

// Plus returns the sum of c and d.
func (c Counts) Plus(d Counts) Counts {
	return Counts{c.Copied + d.Copied, c.Same + d.Same, c.Conflicts + d.Conflicts}
}

// Tally is one side's view of one account for the verification: how
// many meals, photo objects and share links it holds, and Sum, the
// SHA-256 (hex) over the account's users row, its meals and share links
// (each as canonical JSON, sorted by key) and its objects' keys and
// SHA-256s (sorted by key). Sessions and the waiting-for-owner mark are
// left out of the row; nothing else is.
type Tally struct {
	Meals, Photos, Shares int
	Sum                   string
}

// Account is what Run did with one account of the source.
type Account struct {
	// ID is the users row's key: local mode's subject, made from the
	// email, or (server mode) the provider's subject.
	ID string
	// Skipped says why the account was not copied ("" if it was): it is
	// being deleted, or the target has another account with its email.
	Skipped string
	// Row, Meals, Shares and Photos count the copy of each kind.
	Row, Meals, Shares, Photos Counts
	// Marked: the account is marked as waiting for its owner. MarkErr is
	// why it is not, when it should be ("" if it is, or in a dry run).
	// Unmarked says why an account that needs no mark has none (its ID
	// is a provider's subject).
	Marked   bool
	MarkErr  string
	Unmarked string
	// Source and Target are the verification's tallies (after a run
	// that is not a dry run, for accounts not skipped).
	Source, Target Tally
}

// Verified reports whether the account's two tallies are equal.
func (a Account) Verified() bool { return a.Source == a.Target }

// Report is what Run did.
type Report struct {
	DryRun   bool
	Accounts []Account
	// Invites counts the copy of the invites table's items.
	Invites Counts
	// Unowned counts share links whose owner was not copied (an account
	// being deleted, or none at all): not copied.
	Unowned int
	// DeletedInvites counts invites made by or claimed by an account
	// being deleted, which its deletion removes: not copied.
	DeletedInvites int
}

// Totals returns the counts of every kind, added up over the accounts.
func (r *Report) Totals() (items, objects Counts) {
	items = r.Invites
	for _, a := range r.Accounts {
		items = items.Plus(a.Row).Plus(a.Meals).Plus(a.Shares)
		objects = objects.Plus(a.Photos)
	}
	return items, objects
}

// OK reports whether the run left the target equal to the source for
// every copied account: no conflicts, every mark set, every tally
// equal. A dry run is OK when it found no conflicts.
func (r *Report) OK() bool {
	items, objects := r.Totals()
	if items.Conflicts > 0 || objects.Conflicts > 0 {
		return false
	}
	if r.DryRun {
		return true
	}
	for _, a := range r.Accounts {
		if a.Skipped == "" && (a.MarkErr != "" || !a.Verified()) {
			return false
		}
	}
	return true
}

// outcome is what a conditional copy of one item or object found.
type outcome int

const (
	copied   outcome = iota // put (or, in a dry run, would be)
	same                    // there already, equal
	conflict                // there already, different
)

// rowSkip are the users row's attributes never copied or compared:
// the sessions (signed-in browsers of the source) and the
// waiting-for-owner mark, which Mark sets on the target.
var rowSkip = []string{"sessions", "sessions_rev", "awaiting_owner", "owner_mark"}

// run is one migration's state.
type run struct {
	src, dst Side
	o        Options
	writes   *limit.Pacer
	reads    *limit.Pacer
	// deleting holds the IDs of the source's accounts being deleted.
	deleting map[string]bool
}

// Run copies src into dst as the package comment says and returns what
// it did; Report.OK tells whether the target now equals the source. An
// error is a storage call that failed (the run stops there; running it
// again goes on where it stopped) or a bad option.
func Run(ctx context.Context, src, dst Side, o Options) (*Report, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	if o.WriteUnits == 0 {
		o.WriteUnits = DefaultWriteUnits
	}
	if o.ReadUnits == 0 {
		o.ReadUnits = DefaultReadUnits
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Clock == nil {
		o.Clock = limit.SystemClock{}
	}
	if o.ObjectWorkers <= 0 {
		o.ObjectWorkers = 4
	}
	// A burst of one second's units at most: the caps are per second.
	r := &run{src: src, dst: dst, o: o,
		writes:   limit.NewPacer(o.WriteUnits, max(1, int(o.WriteUnits)), o.Clock),
		reads:    limit.NewPacer(o.ReadUnits, max(1, int(o.ReadUnits)), o.Clock),
		deleting: map[string]bool{},
	}
	rep := &Report{DryRun: o.DryRun}
	if err := r.accounts(ctx, rep); err != nil {
		return nil, err
	}
	invites, err := scanAll(ctx, src.DB, src.Tables.Invites.Name, nil)
	if err != nil {
		return nil, err
	}
	for _, inv := range invites {
		if r.deleting[str(inv, "created_by")] || r.deleting[str(inv, "claimed_by")] {
			rep.DeletedInvites++
			continue
		}
		out, err := r.copyItem(ctx, dst.Tables.Invites, inv, nil)
		if err != nil {
			return nil, err
		}
		rep.Invites.add(out)
	}
	if !o.DryRun {
		if err := r.verify(ctx, rep); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// accounts copies every account of the source, in the users table's
// order, leaving out reserved items, accounts being deleted and those
// whose email the target already has under another key, into rep.
func (r *run) accounts(ctx context.Context, rep *Report) error {
	rows, err := scanAll(ctx, r.src.DB, r.src.Tables.Users.Name, nil)
	if err != nil {
		return err
	}
	taken, err := r.targetEmails(ctx)
	if err != nil {
		return err
	}
	shares, err := scanAll(ctx, r.src.DB, r.src.Tables.Shares.Name, nil)
	if err != nil {
		return err
	}
	byOwner := map[string][]map[string]types.AttributeValue{}
	for _, s := range shares {
		owner := str(s, "owner_id")
		byOwner[owner] = append(byOwner[owner], s)
	}
	copiedIDs := map[string]bool{}
	for _, row := range rows {
		id := str(row, "user_id")
		if user.Reserved(id) {
			continue // sessions' keys, the lease, marks: no account
		}
		a := Account{ID: id}
		switch other := taken[strings.ToLower(str(row, "email"))]; {
		case str(row, "status") == string(user.StatusDeleting):
			a.Skipped = "being deleted"
			r.deleting[id] = true
		case other != "" && other != id:
			a.Skipped = "the target has another account with this email"
		}
		if a.Skipped == "" {
			copiedIDs[id] = true
			if err := r.account(ctx, &a, row, byOwner[id]); err != nil {
				return err
			}
		}
		rep.Accounts = append(rep.Accounts, a)
		r.progress(&a)
	}
	for owner, list := range byOwner {
		if !copiedIDs[owner] {
			rep.Unowned += len(list)
		}
	}
	return nil
}

// verify tallies every copied account on both sides.
func (r *run) verify(ctx context.Context, rep *Report) error {
	for i := range rep.Accounts {
		a := &rep.Accounts[i]
		if a.Skipped != "" {
			continue
		}
		var err error
		if a.Source, err = r.tally(ctx, r.src, a.ID, nil); err != nil {
			return err
		}
		if a.Target, err = r.tally(ctx, r.dst, a.ID, r.reads); err != nil {
			return err
		}
	}
	return nil
}

// account copies one account: its users row first (so the objects and
// rows after it belong to an account), then its photo objects, its
// meals (after their objects, as the app stores them) and its share
// links, then marks it.
func (r *run) account(ctx context.Context, a *Account, row map[string]types.AttributeValue, shares []map[string]types.AttributeValue) error {
	out, err := r.copyItem(ctx, r.dst.Tables.Users, row, rowSkip)
	if err != nil {
		return err
	}
	a.Row.add(out)
	if err := r.photos(ctx, a); err != nil {
		return err
	}
	meals, err := queryMeals(ctx, r.src.DB, r.src.Tables.Meals.Name, a.ID, nil)
	if err != nil {
		return err
	}
	for _, m := range meals {
		out, err := r.copyItem(ctx, r.dst.Tables.Meals, m, nil)
		if err != nil {
			return err
		}
		a.Meals.add(out)
	}
	for _, s := range shares {
		out, err := r.copyItem(ctx, r.dst.Tables.Shares, s, nil)
		if err != nil {
			return err
		}
		a.Shares.add(out)
	}
	return r.mark(ctx, a, row)
}

// mark marks a copied account as waiting for its owner, unless this is
// a dry run, its ID is a provider's subject, its row conflicts, or it is
// not active (a disabled account is copied but waits for an admin to
// enable it and mark it).
func (r *run) mark(ctx context.Context, a *Account, row map[string]types.AttributeValue) error {
	if r.o.DryRun || r.o.Mark == nil {
		return nil
	}
	if a.ID != localenv.Subject(str(row, "email")) {
		a.Unmarked = "signs in as before (its ID is its provider's subject)"
		return nil
	}
	switch status := str(row, "status"); {
	case a.Row.Conflicts > 0:
		a.MarkErr = "not marked: the target's users row differs"
		return nil
	case status != "" && status != string(user.StatusActive):
		a.MarkErr = "not marked: the account is " + status + " (an admin can mark it once it is enabled)"
		return nil
	}
	if err := r.writes.Wait(ctx, 2); err != nil {
		return err
	}
	now := r.o.Now()
	err := r.o.Mark(ctx, a.ID, now, user.OwnerMark{By: user.MarkedByMigrate, Expires: now.Add(r.o.MarkLifetime), Issuer: LocalIssuer})
	switch {
	case err == nil:
		a.Marked = true
	case errors.Is(err, user.ErrEmailTaken):
		a.MarkErr = "not marked: another account waiting for its owner has this email"
	case errors.Is(err, user.ErrState), errors.Is(err, user.ErrNotFound):
		a.MarkErr = "not marked: " + err.Error()
	default:
		return fmt.Errorf("migrate: mark %s: %w", a.ID, err)
	}
	return nil
}

// progress writes a line about a done.
func (r *run) progress(a *Account) {
	if r.o.Progress == nil {
		return
	}
	if a.Skipped != "" {
		fmt.Fprintf(r.o.Progress, "%s: not copied: %s\n", a.ID, a.Skipped)
		return
	}
	verb := "copied"
	if r.o.DryRun {
		verb = "would copy"
	}
	fmt.Fprintf(r.o.Progress, "%s: %s %d meals, %d photo objects, %d share links (already there: %d, %d, %d)",
		a.ID, verb, a.Meals.Copied, a.Photos.Copied, a.Shares.Copied, a.Meals.Same, a.Photos.Same, a.Shares.Same)
	if n := a.Row.Conflicts + a.Meals.Conflicts + a.Photos.Conflicts + a.Shares.Conflicts; n > 0 {
		fmt.Fprintf(r.o.Progress, "; %d conflicts", n)
	}
	fmt.Fprintln(r.o.Progress)
}

// targetEmails returns the target's accounts by lower-cased email, to
// find one that already holds a source account's email under another
// key (the owner signed in and the account moved to their subject, or
// they signed up there themselves): that account is not copied again.
func (r *run) targetEmails(ctx context.Context) (map[string]string, error) {
	proj := expression.NamesList(expression.Name("user_id"), expression.Name("email"))
	expr, err := expression.NewBuilder().WithProjection(proj).Build()
	if err != nil {
		return nil, err
	}
	taken := map[string]string{}
	err = dynamo.ScanPaced(ctx, r.dst.DB, &dynamodb.ScanInput{
		TableName:                aws.String(r.dst.Tables.Users.Name),
		ProjectionExpression:     expr.Projection(),
		ExpressionAttributeNames: expr.Names(),
		ConsistentRead:           aws.Bool(true),
	}, r.reads.Wait, func(out *dynamodb.ScanOutput) error {
		for _, it := range out.Items {
			if id := str(it, "user_id"); !user.Reserved(id) && str(it, "email") != "" {
				taken[strings.ToLower(str(it, "email"))] = id
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("migrate: target users: %w", err)
	}
	return taken, nil
}

// maxItemUnits is the most units one item costs: a 400 KB item is 400
// write units (1 KB each) or 100 read units (4 KB each).
const maxItemUnits = 400

// writeUnits is what writing item costs in write units: one per KB
// begun, at least 1. The size is the canonical JSON's, an upper bound of
// DynamoDB's own item size.
func writeUnits(item map[string]types.AttributeValue) int {
	return min(maxItemUnits, max(1, (len(canonical(item))+1023)/1024))
}

// spend pays n units through p in parts of at most burst (the pacer's
// burst: a larger Wait would be charged as the burst alone).
func spend(ctx context.Context, p *limit.Pacer, n, burst int) error {
	burst = max(1, burst)
	for n > 0 {
		part := min(n, burst)
		if err := p.Wait(ctx, part); err != nil {
			return err
		}
		n -= part
	}
	return nil
}

// copyItem puts item (without the attributes in skip) into table t of
// the target if no item has its key, and otherwise compares the two
// (skip left out): same or conflict. In a dry run it reads instead.
func (r *run) copyItem(ctx context.Context, t dynamo.Table, item map[string]types.AttributeValue, skip []string) (outcome, error) {
	put := map[string]types.AttributeValue{}
	for k, v := range item {
		if !slices.Contains(skip, k) {
			put[k] = v
		}
	}
	key := map[string]types.AttributeValue{t.PartitionKey: item[t.PartitionKey]}
	if t.SortKey != "" {
		key[t.SortKey] = item[t.SortKey]
	}
	var there map[string]types.AttributeValue
	if r.o.DryRun {
		if err := r.reads.Wait(ctx, 1); err != nil {
			return 0, err
		}
		out, err := r.dst.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(t.Name), Key: key, ConsistentRead: aws.Bool(true)})
		if err != nil {
			return 0, fmt.Errorf("migrate: read %s: %w", t.Name, err)
		}
		if len(out.Item) == 0 {
			return copied, nil
		}
		there = out.Item
	} else {
		if err := spend(ctx, r.writes, writeUnits(put), int(r.o.WriteUnits)); err != nil {
			return 0, err
		}
		_, err := r.dst.DB.PutItem(ctx, &dynamodb.PutItemInput{
			TableName:                           aws.String(t.Name),
			Item:                                put,
			ConditionExpression:                 aws.String("attribute_not_exists(#k)"),
			ExpressionAttributeNames:            map[string]string{"#k": t.PartitionKey},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		if err == nil {
			return copied, nil
		}
		if !dynamo.IsConditionFailed(err) {
			return 0, fmt.Errorf("migrate: put into %s: %w", t.Name, err)
		}
		if there, err = dynamo.RefusedItem(ctx, r.dst.DB, t.Name, key, err); err != nil {
			return 0, fmt.Errorf("migrate: read %s: %w", t.Name, err)
		}
	}
	if string(canonical(there, skip...)) == string(canonical(put)) {
		return same, nil
	}
	return conflict, nil
}

// scanAll reads every item of table, paying each page through pace if
// it is set (the target's reads).
func scanAll(ctx context.Context, db *dynamodb.Client, table string, pace *limit.Pacer) ([]map[string]types.AttributeValue, error) {
	var items []map[string]types.AttributeValue
	in := &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)}
	err := dynamo.ScanPaced(ctx, db, in, paceOf(pace), func(out *dynamodb.ScanOutput) error {
		items = append(items, out.Items...)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	return items, nil
}

// paceOf is p's Wait, or no pacing (the source's reads) for nil.
func paceOf(p *limit.Pacer) dynamo.Pace {
	if p == nil {
		return func(context.Context, int) error { return nil }
	}
	return p.Wait
}

// queryMeals returns every meal of id, oldest first: the items of its
// partition below meal.MealKeyCeiling (no idempotency claim).
func queryMeals(ctx context.Context, db *dynamodb.Client, table, id string, pace *limit.Pacer) ([]map[string]types.AttributeValue, error) {
	kc := expression.Key("user_id").Equal(expression.Value(id)).
		And(expression.Key("sk").LessThan(expression.Value(meal.MealKeyCeiling)))
	expr, err := expression.NewBuilder().WithKeyCondition(kc).Build()
	if err != nil {
		return nil, err
	}
	p := dynamodb.NewQueryPaginator(db, &dynamodb.QueryInput{
		TableName:                 aws.String(table),
		KeyConditionExpression:    expr.KeyCondition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
		ConsistentRead:            aws.Bool(true),
		Limit:                     aws.Int32(dynamo.PacedPageItems),
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityTotal,
	})
	wait := paceOf(pace)
	var items []map[string]types.AttributeValue
	ahead := 1
	for p.HasMorePages() {
		if err := wait(ctx, ahead); err != nil {
			return nil, err
		}
		out, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("migrate: meals of %s: %w", id, err)
		}
		ahead = dynamo.PageUnits(out.ConsumedCapacity, out.ScannedCount, out.Count)
		items = append(items, out.Items...)
	}
	return items, nil
}

// str is item's string attribute name, "" if it has none.
func str(item map[string]types.AttributeValue, name string) string {
	if s, ok := item[name].(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}
