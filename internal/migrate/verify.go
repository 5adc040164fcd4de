package migrate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"ndiro/internal/limit"
	"ndiro/internal/photo"
)

// tally reads what side holds of the account id, as Tally says: the
// users row, the meals, the share links (a Scan of the shares table for
// its owner_id) and every object under its prefix, read whole and
// hashed. pace, if set, pays for the table reads.
func (r *run) tally(ctx context.Context, side Side, id string, pace *limit.Pacer) (Tally, error) {
	h := sha256.New()
	if err := paceOf(pace)(ctx, 1); err != nil {
		return Tally{}, err
	}
	out, err := side.DB.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(side.Tables.Users.Name),
		Key:            map[string]types.AttributeValue{"user_id": &types.AttributeValueMemberS{Value: id}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return Tally{}, fmt.Errorf("migrate: verify %s: %w", id, err)
	}
	fmt.Fprintf(h, "user %s\n", canonical(out.Item, rowSkip...))

	meals, err := queryMeals(ctx, side.DB, side.Tables.Meals.Name, id, pace)
	if err != nil {
		return Tally{}, err
	}
	lines := make([]string, len(meals))
	for i, m := range meals {
		lines[i] = "meal " + string(canonical(m)) + "\n"
	}
	writeSorted(h, lines)

	shares, err := r.sharesOf(ctx, side, id, pace)
	if err != nil {
		return Tally{}, err
	}
	lines = make([]string, len(shares))
	for i, s := range shares {
		lines[i] = "share " + string(canonical(s)) + "\n"
	}
	writeSorted(h, lines)

	keys, err := listKeys(ctx, side, photo.UserPrefix(id))
	if err != nil {
		return Tally{}, err
	}
	slices.Sort(keys)
	for _, k := range keys {
		body, _, _, err := getObject(ctx, side, k)
		if err != nil {
			return Tally{}, err
		}
		fmt.Fprintf(h, "photo %s %s\n", k, sha(body))
	}
	return Tally{Meals: len(meals), Photos: len(keys), Shares: len(shares), Sum: hex.EncodeToString(h.Sum(nil))}, nil
}

// writeSorted writes lines to w in byte order, so the order a side
// answered in does not change its checksum.
func writeSorted(w io.Writer, lines []string) {
	slices.Sort(lines)
	for _, l := range lines {
		io.WriteString(w, l)
	}
}

// sharesOf returns the share links side holds for owner id: a Scan
// filtered on owner_id (the shares table is keyed by token; at ~100
// links a deployment it is a page or two).
func (r *run) sharesOf(ctx context.Context, side Side, id string, pace *limit.Pacer) ([]map[string]types.AttributeValue, error) {
	expr, err := expression.NewBuilder().WithFilter(expression.Name("owner_id").Equal(expression.Value(id))).Build()
	if err != nil {
		return nil, err
	}
	var items []map[string]types.AttributeValue
	p := dynamodb.NewScanPaginator(side.DB, &dynamodb.ScanInput{
		TableName:                 aws.String(side.Tables.Shares.Name),
		FilterExpression:          expr.Filter(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
		ConsistentRead:            aws.Bool(true),
		Limit:                     aws.Int32(100),
	})
	for p.HasMorePages() {
		if err := paceOf(pace)(ctx, 100); err != nil {
			return nil, err
		}
		out, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("migrate: verify shares of %s: %w", id, err)
		}
		items = append(items, out.Items...)
	}
	return items, nil
}

// Write prints the report for a person: a table of the accounts (in a
// dry run what would be copied; otherwise each side's counts and the
// first 12 hex digits of its checksum, and whether they are equal), the
// invites, and a closing line saying what was copied, or that nothing
// was.
func (r *Report) Write(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	if r.DryRun {
		fmt.Fprintln(tw, "account\tmeals\tphotos\tshares\tresult")
		for _, a := range r.Accounts {
			if a.Skipped != "" {
				fmt.Fprintf(tw, "%s\t-\t-\t-\tnot copied: %s\n", a.ID, a.Skipped)
				continue
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\n", a.ID, a.Meals.Copied, a.Photos.Copied, a.Shares.Copied, dryResult(&a))
		}
	} else {
		fmt.Fprintln(tw, "account\tmeals\tphotos\tshares\tsource sum\ttarget sum\tresult")
		for _, a := range r.Accounts {
			if a.Skipped != "" {
				fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\tnot copied: %s\n", a.ID, a.Skipped)
				continue
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", a.ID,
				pair(a.Source.Meals, a.Target.Meals), pair(a.Source.Photos, a.Target.Photos), pair(a.Source.Shares, a.Target.Shares),
				short(a.Source.Sum), short(a.Target.Sum), result(&a))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	items, objects := r.Totals()
	verb, there := "copied", "already in the target"
	if r.DryRun {
		verb = "would copy"
	}
	fmt.Fprintf(w, "invites: %s %d, %d %s", verb, r.Invites.Copied, r.Invites.Same, there)
	if r.Invites.Conflicts > 0 {
		fmt.Fprintf(w, ", %d conflicting", r.Invites.Conflicts)
	}
	fmt.Fprintln(w)
	if r.Unowned > 0 {
		fmt.Fprintf(w, "share links of accounts not copied: %d, not copied\n", r.Unowned)
	}
	if r.DeletedInvites > 0 {
		fmt.Fprintf(w, "invites of accounts being deleted: %d, not copied\n", r.DeletedInvites)
	}
	if n := items.Conflicts + objects.Conflicts; n > 0 {
		fmt.Fprintf(w, "conflicts: %d items and objects in the target differ from the source and were left as they are\n", n)
	}
	switch {
	case items.Copied+objects.Copied == 0 && r.DryRun:
		fmt.Fprintf(w, "dry run: nothing to copy; %d items and %d photo objects are %s\n", items.Same, objects.Same, there)
	case items.Copied+objects.Copied == 0:
		fmt.Fprintf(w, "copied nothing: all %d items and %d photo objects were %s\n", items.Same, objects.Same, there)
	case r.DryRun:
		fmt.Fprintf(w, "dry run: would copy %d items and %d photo objects (%d and %d %s); nothing was written\n", items.Copied, objects.Copied, items.Same, objects.Same, there)
	default:
		fmt.Fprintf(w, "copied %d items and %d photo objects (%d and %d were %s)\n", items.Copied, objects.Copied, items.Same, objects.Same, there)
	}
	if !r.DryRun {
		if r.OK() {
			fmt.Fprintln(w, "verified: every copied account is equal in the source and the target")
		} else {
			fmt.Fprintln(w, "NOT verified: the accounts above marked otherwise differ; see their result")
		}
	}
	return nil
}

func dryResult(a *Account) string {
	if n := a.Row.Conflicts + a.Meals.Conflicts + a.Photos.Conflicts + a.Shares.Conflicts; n > 0 {
		return fmt.Sprintf("%d conflicts", n)
	}
	if a.Row.Copied+a.Meals.Copied+a.Photos.Copied+a.Shares.Copied == 0 {
		return "already copied"
	}
	return "to copy"
}

func result(a *Account) string {
	var out []string
	if a.Verified() {
		out = append(out, "equal")
	} else {
		out = append(out, "DIFFERENT")
	}
	if n := a.Row.Conflicts + a.Meals.Conflicts + a.Photos.Conflicts + a.Shares.Conflicts; n > 0 {
		out = append(out, fmt.Sprintf("%d conflicts", n))
	}
	switch {
	case a.Marked:
		out = append(out, "waiting for its owner")
	case a.MarkErr != "":
		out = append(out, a.MarkErr)
	case a.Unmarked != "":
		out = append(out, a.Unmarked)
	}
	return strings.Join(out, "; ")
}

// pair is "n" when both sides hold n, else "source/target".
func pair(s, t int) string {
	if s == t {
		return fmt.Sprint(s)
	}
	return fmt.Sprintf("%d/%d", s, t)
}

func short(sum string) string { return sum[:min(12, len(sum))] }
