package meal

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"ndiro/internal/dynamo"
	"ndiro/internal/token"
	"ndiro/internal/web"
)

// An idempotency key names one meal a browser means to create, however
// often the form is sent: the offline outbox chooses one per queued meal
// on the phone and sends it as the form field "idem", so a lost answer, a
// second tab or a retry after a crash creates the meal once (issue 27).
//
// The key is claimed with a conditional write before any photo object is
// written: an item in the meals table under the owner's partition key, at
// sort key ClaimPrefix + key. '~' sorts after every digit and no meal sort
// key (a four-digit year first) can begin with it, so every meal key is
// below MealKeyCeiling and every claim above it: the month, window and
// neighbour queries never reach a claim, and All, Search, Count and the
// orphan check bound themselves below the ceiling. DeleteAll (account
// deletion) reads the whole partition and so removes claims too.
const (
	ClaimPrefix    = "~idem#"
	MealKeyCeiling = "~"
)

// Bounds of an idempotency key: 16 to 64 characters of A-Z, a-z, 0-9, '-'
// and '_' (a UUID, or 128 random bits in base64url, fits).
const (
	MinIdemKey = 16
	MaxIdemKey = 64
)

// ClaimTTL is how long a claim is kept after it is made: a repeat sent
// within it gets the first meal. The claim's expires_at attribute is the
// meals table's DynamoDB TTL attribute (deploy/terraform/tables.tf), which
// deletes it lazily; a claim past it is still honoured until deleted.
const ClaimTTL = 30 * 24 * time.Hour

// ClaimLease is how long a claim whose meal is not written yet holds the
// key against a repeat: past it, the attempt that made it is taken for
// dead (a request lives far shorter: storage calls are bounded, and the
// server's write timeout ends it) and a repeat may take the claim over.
const ClaimLease = 2 * time.Minute

// ErrBadIdemKey is returned for a key outside MinIdemKey..MaxIdemKey
// characters of [A-Za-z0-9_-].
var ErrBadIdemKey = errors.New("idempotency key must be 16 to 64 characters of A-Z, a-z, 0-9, - and _")

// ErrClaimed is returned by Claim and TakeOver when another attempt holds
// the key; the claim returned beside it is that attempt's.
var ErrClaimed = errors.New("idempotency key already claimed")

// ValidIdemKey returns nil if k is a usable idempotency key, else
// ErrBadIdemKey.
func ValidIdemKey(k string) error {
	if len(k) < MinIdemKey || len(k) > MaxIdemKey {
		return ErrBadIdemKey
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return ErrBadIdemKey
		}
	}
	return nil
}

// Claim is the item of one idempotency key: which meal it creates (its
// sort key, chosen when the key is claimed, so that every attempt writes
// the same row and photo keys), which attempt holds it, and whether the
// meal row is written.
type Claim struct {
	UserID string `dynamodbav:"user_id"`
	SK     string `dynamodbav:"sk"` // ClaimPrefix + the key
	// MealSK is the sort key of the meal the key creates.
	MealSK string `dynamodbav:"meal_sk"`
	// Holder is a random value of the attempt that made or took over
	// the claim; writes to the claim are conditional on it.
	Holder string `dynamodbav:"holder"`
	// Done: the meal row is written.
	Done bool `dynamodbav:"done"`
	// ClaimedAt is when the holder claimed it, Unix nanoseconds.
	ClaimedAt int64 `dynamodbav:"claimed_at"`
	// Digest is the first request's content (requestDigest), kept from
	// the moment the key is claimed; a repeat whose content differs is
	// refused. "" on a claim written before digests were kept: any
	// repeat of it is taken as the same request.
	Digest string `dynamodbav:"digest,omitempty"`
	// ExpiresAt is the TTL attribute, Unix seconds.
	ExpiresAt int64 `dynamodbav:"expires_at"`
}

// NewClaim returns the claim an attempt makes at now for key of userID,
// creating the meal at sort key mealSK, for a request of content digest
// (requestDigest).
func NewClaim(userID, key, mealSK, digest string, now time.Time) *Claim {
	var b [12]byte
	rand.Read(b[:])
	return &Claim{UserID: userID, SK: ClaimPrefix + key, MealSK: mealSK, Holder: hex.EncodeToString(b[:]),
		ClaimedAt: now.UnixNano(), ExpiresAt: now.Add(ClaimTTL).Unix(), Digest: digest}
}

// sameRequest reports whether a request of content digest repeats the
// one that made c: equal digests, or a claim that kept none.
func (c *Claim) sameRequest(digest string) bool {
	return c.Digest == "" || c.Digest == digest
}

// requestDigest is the content of a create request with an idempotency
// key, compared with a repeat's: the meal's fields as the form parsed
// them (m, before the photo files it anywhere), the form's inputs that
// decide its filing, and photoSum, the hex SHA-256 of the photo's bytes
// as sent ("" for none). It is "v1:" and the hex SHA-256 of their JSON.
func requestDigest(m *Meal, f *Form, photoSum string) string {
	num := func(n *Number) string {
		if n == nil {
			return ""
		}
		return n.String()
	}
	scale := func(n *int) int {
		if n == nil {
			return 0
		}
		return *n
	}
	b, err := json.Marshal(struct {
		Date, Time, Kind, Notes      string
		Kcal, ProteinG, CarbsG, FatG string
		Hunger, Fullness             int
		DefaultDate, DefaultTime     string
		FixedDate                    bool
		Taken, Photo                 string
	}{m.Date, m.Time, string(m.Kind), m.Notes, num(m.Kcal), num(m.ProteinG), num(m.CarbsG), num(m.FatG),
		scale(m.Hunger), scale(m.Fullness), f.DefaultDate, f.DefaultTime, f.FixedDate, f.Taken, photoSum})
	if err != nil {
		panic(err) // strings, ints and a bool: cannot fail
	}
	sum := sha256.Sum256(b)
	return "v1:" + hex.EncodeToString(sum[:])
}

// Stale reports whether c, not done, is past its lease at now: its
// attempt is taken for dead.
func (c *Claim) Stale(now time.Time) bool {
	return !c.Done && now.Sub(time.Unix(0, c.ClaimedAt)) > ClaimLease
}

// Claim writes c if no item holds its key (attribute_not_exists). If one
// does, it returns that claim and ErrClaimed; a refusal over c itself (the
// SDK sent the write again after its answer was lost) is success.
func (s *Store) Claim(ctx context.Context, c *Claim) (*Claim, error) {
	return s.putClaim(ctx, c, newKey)
}

// TakeOver replaces old, a stale claim (Claim.Stale), with c, conditional
// on old's holder still holding it: of several attempts taking over, one
// wins, the others get the winner's claim and ErrClaimed.
func (s *Store) TakeOver(ctx context.Context, old, c *Claim) (*Claim, error) {
	return s.putClaim(ctx, c, held(old.Holder, false))
}

// held is the condition that holder holds a claim (and, with notDone,
// that its meal is not written yet).
func held(holder string, notDone bool) expression.Expression {
	cond := expression.Name("holder").Equal(expression.Value(holder))
	if notDone {
		cond = cond.And(expression.Name("done").Equal(expression.Value(false)))
	}
	return mustBuild(cond)
}

func (s *Store) putClaim(ctx context.Context, c *Claim, cond expression.Expression) (*Claim, error) {
	item, err := attributevalue.MarshalMap(c)
	if err != nil {
		return nil, fmt.Errorf("meal: claim: encode: %w", err)
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                           aws.String(s.table),
		Item:                                item,
		ConditionExpression:                 cond.Condition(),
		ExpressionAttributeNames:            cond.Names(),
		ExpressionAttributeValues:           cond.Values(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if dynamo.IsConditionFailed(err) {
		got, gerr := dynamo.RefusedItem(ctx, s.db, s.table, key(c.UserID, c.SK), err)
		if gerr != nil {
			return nil, fmt.Errorf("meal: claim: %w", gerr)
		}
		var other Claim
		if err := attributevalue.UnmarshalMap(got, &other); err != nil {
			return nil, fmt.Errorf("meal: claim: decode: %w", err)
		}
		if len(got) > 0 && other.Holder == c.Holder {
			return nil, nil // this very write, sent again after its answer was lost
		}
		if len(got) == 0 {
			// Gone between the refusal and the read (a take-over's
			// condition over a claim deleted meanwhile): a fresh claim.
			return s.putClaim(ctx, c, newKey)
		}
		return &other, fmt.Errorf("meal: claim: %w", ErrClaimed)
	}
	if err != nil {
		return nil, fmt.Errorf("meal: claim: %w", err)
	}
	return nil, nil
}

// GetClaim reads the claim of key for userID (consistently), or
// ErrNotFound.
func (s *Store) GetClaim(ctx context.Context, userID, key string) (*Claim, error) {
	c, found, err := dynamo.GetItemAt[Claim](ctx, s.db, s.table, claimKey(userID, key))
	if err != nil {
		return nil, fmt.Errorf("meal: get claim: %w", err)
	}
	if !found {
		return nil, fmt.Errorf("meal: get claim: %w", ErrNotFound)
	}
	return &c, nil
}

// FinishClaim marks c done (its meal row is written), conditional on c's
// holder. A claim taken over meanwhile is left as it is (nil): the meal
// row at c.MealSK is what its new holder finds and answers with.
func (s *Store) FinishClaim(ctx context.Context, c *Claim) error {
	upd, err := expression.NewBuilder().WithCondition(expression.Name("holder").Equal(expression.Value(c.Holder))).
		WithUpdate(expression.Set(expression.Name("done"), expression.Value(true))).Build()
	if err != nil {
		return fmt.Errorf("meal: finish claim: %w", err)
	}
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       key(c.UserID, c.SK),
		ConditionExpression:       upd.Condition(),
		UpdateExpression:          upd.Update(),
		ExpressionAttributeNames:  upd.Names(),
		ExpressionAttributeValues: upd.Values(),
	})
	if err != nil && !dynamo.IsConditionFailed(err) {
		return fmt.Errorf("meal: finish claim: %w", err)
	}
	c.Done = true
	return nil
}

// ReleaseClaim deletes c, conditional on c's holder and its meal not
// written: a create that failed before its row was written frees the key,
// so the next attempt goes ahead at once instead of waiting out the
// lease. A claim taken over or finished meanwhile is left (nil).
func (s *Store) ReleaseClaim(ctx context.Context, c *Claim) error {
	cond := held(c.Holder, true)
	_, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                 aws.String(s.table),
		Key:                       key(c.UserID, c.SK),
		ConditionExpression:       cond.Condition(),
		ExpressionAttributeNames:  cond.Names(),
		ExpressionAttributeValues: cond.Values(),
	})
	if err != nil && !dynamo.IsConditionFailed(err) {
		return fmt.Errorf("meal: release claim: %w", err)
	}
	return nil
}

func claimKey(userID, k string) map[string]types.AttributeValue {
	return key(userID, ClaimPrefix+k)
}

// belowClaims is the key condition that keeps a Query of a partition to
// its meals: sk < MealKeyCeiling.
func belowClaims() expression.KeyConditionBuilder {
	return expression.Key("sk").LessThan(expression.Value(MealKeyCeiling))
}

// mealsOnly is the Scan filter that keeps claims out of what a Scan
// returns and counts (they are still read: a Scan cannot skip them).
var mealsOnly = mustFilter(expression.Name("sk").LessThan(expression.Value(MealKeyCeiling)))

func mustFilter(c expression.ConditionBuilder) expression.Expression {
	e, err := expression.NewBuilder().WithFilter(c).Build()
	if err != nil {
		panic(err) // a constant expression: fails at start-up in every test
	}
	return e
}

// IdemField is the meal form's field carrying an idempotency key.
const IdemField = "idem"

// Waiting for another attempt of the same key: how long, and how often it
// is looked at meanwhile.
const (
	claimWait = 3 * time.Second
	claimPoll = 100 * time.Millisecond
)

// errBeingSaved answers a repeat of a key whose first attempt is still at
// work after claimWait; the outbox tries again later.
var errBeingSaved = &web.Error{Status: http.StatusConflict, Title: "Already being saved",
	Msg: "This meal is already being saved (from another window, or an earlier try that has not finished). Wait a moment, then open your diary to see it."}

// idemKey returns the form's idempotency key ("" for none), or a 400 for a
// key ValidIdemKey refuses.
func idemKey(r *http.Request) (string, error) {
	k := r.Form.Get(IdemField)
	if k == "" {
		return "", nil
	}
	if ValidIdemKey(k) != nil {
		return "", web.BadRequest("The form's idempotency key (" + IdemField + ") must be 16 to 64 characters of A-Z, a-z, 0-9, - and _. Send the meal again from the Add page.")
	}
	return k, nil
}

// prior is the meal an idempotency key created before, as a repeat of
// the same request finds it: its sort key, and whether it is gone since
// (deleted, or moved: no tombstone tells which).
type prior struct {
	sk   string
	gone bool
}

// keyReused refuses a repeat of a key whose first request had other
// content (Claim.Digest): sk is the meal that request made, "" if there
// is none yet.
type keyReused struct{ sk string }

func (e *keyReused) Error() string { return "meal: idempotency key used for other content" }

// claim claims key for m (UserID, Date and Time set), a request of
// content digest (requestDigest), at now, before anything of m is
// written, and sets m's ID (and its Date and Time, for a claim taken
// over) to the meal the claim creates. A repeat of the same request gets
// the meal the key created (prior, which says if it is gone since) and
// claims nothing; a request of other content gets *keyReused, whatever
// state the key is in. An attempt of the key still at work is waited for
// up to claimWait, then answered with errBeingSaved; one dead
// (Claim.Stale) is taken over, keeping its meal's sort key, so that its
// row, if it turns up after all, refuses ours rather than making the
// meal twice.
func (h *Handler) claim(ctx context.Context, key, digest string, m *Meal, now time.Time) (*prior, *Claim, error) {
	tod, err := ParseTimeOfDay(m.Time)
	if err != nil {
		return nil, nil, fmt.Errorf("meal: claim: %w", err)
	}
	m.ID = NewID(tod)
	c := NewClaim(m.UserID, key, SortKey(mustDate(m.Date), m.ID), digest, now)
	other, err := h.store.Claim(ctx, c)
	wait, cancel := context.WithTimeout(ctx, claimWait)
	defer cancel()
	tick := time.NewTicker(claimPoll)
	defer tick.Stop()
	for {
		switch {
		case err == nil:
			return nil, c, adopt(m, c.MealSK)
		case !errors.Is(err, ErrClaimed):
			return nil, nil, err
		}
		// Its row may be written, its claim not yet marked done (or
		// never: a lost answer, a crash in between).
		var found bool
		found, err = h.written(ctx, other)
		switch {
		case err != nil:
			return nil, nil, err
		case !other.sameRequest(digest):
			reused := &keyReused{}
			if found {
				reused.sk = other.MealSK
			}
			return nil, nil, reused
		case found:
			if !other.Done {
				h.settle(ctx, other, nil) // marked done for the next repeat
			}
			return &prior{sk: other.MealSK}, nil, nil
		case other.Done:
			return &prior{sk: other.MealSK, gone: true}, nil, nil
		case other.Stale(h.now()):
			c.MealSK = other.MealSK
			other, err = h.store.TakeOver(ctx, other, c)
			continue
		}
		select {
		case <-wait.Done():
			if ctx.Err() != nil {
				return nil, nil, ctx.Err()
			}
			return nil, nil, errBeingSaved
		case <-tick.C:
		}
		other, err = h.store.GetClaim(ctx, m.UserID, key)
		if errors.Is(err, ErrNotFound) {
			// Released: its attempt failed before writing the meal.
			other, err = h.store.Claim(ctx, c)
		} else if err == nil {
			err = ErrClaimed
		}
	}
}

// written reports whether the meal row c creates is there.
func (h *Handler) written(ctx context.Context, c *Claim) (bool, error) {
	d, id, err := ParseSortKey(c.MealSK)
	if err != nil {
		return false, fmt.Errorf("meal: claim %q: %w", c.SK, err)
	}
	_, err = h.store.Get(ctx, c.UserID, d, id)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// adopt sets m's date, time and ID to those of the meal sort key sk.
func adopt(m *Meal, sk string) error {
	d, id, err := ParseSortKey(sk)
	if err != nil {
		return fmt.Errorf("meal: claim: %w", err)
	}
	tod, _ := ParseID(id)
	m.Date, m.Time, m.ID = d.String(), tod.String(), id
	return nil
}

// settle ends the claim c of a create that returned err: marked done when
// the row is written, released when it surely is not (so a retry goes
// ahead at once), left to its lease when the write went unanswered. Past
// a cancelled request: the meal's outcome is settled already. Failures
// are logged; a repeat finds the row itself (claim).
func (h *Handler) settle(ctx context.Context, c *Claim, err error) {
	if c == nil {
		return
	}
	ctx = context.WithoutCancel(ctx)
	var serr error
	switch {
	case err == nil:
		serr = h.store.FinishClaim(ctx, c)
	case !unanswered(err) && !errors.Is(err, ErrExists):
		serr = h.store.ReleaseClaim(ctx, c)
	}
	if serr != nil {
		h.log.Warn("idempotency claim not settled", "user_id", c.UserID, "err", serr)
	}
}

// IdemHeader is the response header that marks the refusal of a key used
// before for other content (value IdemReused), so the offline outbox can
// tell it from a form it should fix: it keeps the meal as refused under a
// key of its own, sent again only when the person says so.
const (
	IdemHeader = "X-Ndiro-Idem"
	IdemReused = "reused"
)

// MsgKeyReused is the form's message for a meal sent under a key that
// created another meal (keyReused).
const MsgKeyReused = "A different meal was already sent under this one's upload key (from another window, or an earlier try that was changed since), so this one was not saved. Check your diary; to add this one too, save it again."

// MsgSavedThenGone is the flash of a repeat whose meal was saved and is
// gone since: it is not saved again.
const MsgSavedThenGone = "This meal was saved before and has since been deleted or moved, so it was not saved again."

// mealLinkSK is mealLink for the meal at sort key sk.
func mealLinkSK(sk string) string {
	d, id, _ := ParseSortKey(sk)
	return "/meals?month=" + d.Month().String() + "#meal-" + id
}

// monthLinkSK is the month page of the meal at sort key sk.
func monthLinkSK(sk string) string {
	d, _, _ := ParseSortKey(sk)
	return "/meals?month=" + d.Month().String()
}

// reused answers a request refused for a key used before for other
// content (err): the form again (422, IdemHeader set) with everything as
// typed, the photo kept, a new key, so that saving it again adds it as
// another meal, and a link to the meal the key made, if there is one.
func (h *Handler) reused(w http.ResponseWriter, r *http.Request, err *keyReused, p *formPage, up *upload) error {
	if kerr := h.keep(r, &p.Form, up); kerr != nil {
		return kerr
	}
	p.Kept = up.pending
	p.Form.Idem = token.New()
	if p.Form.Errors == nil {
		p.Form.Errors = map[string]string{}
	}
	p.Form.Errors["meal"] = MsgKeyReused
	if err.sk != "" {
		p.ReusedURL = mealLinkSK(err.sk)
	}
	w.Header().Set(IdemHeader, IdemReused)
	return h.renderForm(w, r, http.StatusUnprocessableEntity, p)
}
