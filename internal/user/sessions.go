package user

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"ndiro/internal/dynamo"
	"ndiro/internal/storage"
)

// Session is one signed-in session as its account's users row keeps it,
// under its ID (SessionID of its token): what the session manager stored,
// when it lapses, and what the account page shows of it.
type Session struct {
	// Data is the session manager's encoded session (scs's Codec).
	Data []byte `dynamodbav:"data"`
	// Expires is when the session lapses: its absolute lifetime or its
	// idle timeout, whichever comes first, as the session manager last
	// committed it (moved on at most every StampEvery).
	Expires time.Time `dynamodbav:"exp"`
	// Created is when it signed in; Seen when it was last used, to
	// within StampEvery.
	Created time.Time `dynamodbav:"at"`
	Seen    time.Time `dynamodbav:"seen"`
	Device
}

// SignedIn is one of an account's live sessions as the account page
// lists it.
type SignedIn struct {
	// ID names the session in a sign-out form (SessionID of its token:
	// no token can be made from it).
	ID string
	Device
	Created, Seen time.Time
}

// The bounds of Sessions.
const (
	// MaxSessions is how many sessions one account keeps signed in: a
	// sign-in beyond it ends the session seen longest ago.
	MaxSessions = 10
	// StampEvery is how often a session in use is written: its last-seen
	// time and idle expiry move on at most this often (one UpdateItem of
	// that session's entry), so a page view costs no write.
	StampEvery = 5 * time.Minute
	// tokenTTL is how long a token's key stays in memory (tokenEntry);
	// the users row, read through the users cache, decides every time
	// whether the session lives.
	tokenTTL       = 10 * time.Minute
	tokenCacheSize = 20_000
	// retryEvery is how often sign-ins and ends that storage refused
	// are tried again.
	retryEvery = 30 * time.Second
	// maxHeld bounds the sign-ins, and the ends, kept in memory while
	// storage refuses them.
	maxHeld = 10_000
	// editTries bounds the writes of a row's sessions lost to another
	// write of them at the same moment.
	editTries = 5
)

// sessionKeyPrefix starts the users table key of each session's key
// item, which says whose the session is: "#session#" + its ID.
const sessionKeyPrefix = ReservedPrefix + "session#"

// ErrNoSession is returned when the account has no live session with that ID.
var ErrNoSession = errors.New("user: no such session")

// SessionID returns the ID a session is kept under: the SHA-256 of its
// token, in hex (64 characters). Only the ID is ever stored, so what is
// stored cannot be replayed as a cookie.
func SessionID(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// tokenEntry is what the key item of a token says: the session's ID and
// whose it is.
type tokenEntry struct{ id, uid string }

// keyItem is a session's key item as stored.
type keyItem struct {
	UID     string    `dynamodbav:"uid"`
	Created time.Time `dynamodbav:"at"`
}

// SessionDeps are what Sessions needs.
type SessionDeps struct {
	// UserIDOf returns the user ID held in a session's encoded data (the
	// session manager's codec), "" if it holds none.
	UserIDOf func(data []byte) string
	Log      *slog.Logger
}

// Sessions is the session manager's store (scs's Store and CtxStore),
// kept in the users table without a table of its own (DESIGN.md,
// sessions): a session lives on its account's users row, in the
// "sessions" map under its ID, and a key item under "#session#" + ID
// says whose it is, so a cookie is looked up with one GetItem, never a
// Scan. Tokens are stored only as their SHA-256 (SessionID). Sessions
// survive a restart or an upgrade; logout, an account's deletion or
// disabling, and "sign out everywhere" end them from the next request,
// because the row, read through the users store's write-through cache,
// decides every lookup.
//
// A page view writes nothing: the session manager commits every session
// it loaded (its idle timeout), and Commit writes only a new session, or,
// at most every StampEvery, the session's last-seen time and expiry, as
// one UpdateItem of that entry. A stamp that fails (a full disk, a
// backend not answering) is skipped and the page answers; an end that
// storage refuses holds in this process at once and is written when
// storage takes writes again.
//
// Token keys are cached in memory by token, so a cached lookup (the owner
// photo route's) costs no hash: two map lookups and one clock reading,
// the users store's clock, which Sessions shares for expiry and
// last-seen times.
type Sessions struct {
	users    *Store
	userIDOf func([]byte) string
	now      func() time.Time
	log      *slog.Logger
	tokens   *dynamo.ItemCache[tokenEntry]
	// loadToken is s.readToken as a value made once (ReadFunc).
	loadToken func(context.Context, string) (tokenEntry, bool, error)

	mu sync.Mutex
	// stampTried is when each session's stamp was last tried, so a
	// failing backend costs one try per StampEvery, not one a request.
	stampTried map[string]time.Time

	// held are the sign-ins and ends storage refused (sessions_held.go).
	held held
}

// NewSessions returns the session store over users' table, cache and
// clock.
func NewSessions(users *Store, d SessionDeps) *Sessions {
	s := &Sessions{
		users: users, userIDOf: d.UserIDOf, now: users.now, log: d.Log,
		tokens:     dynamo.NewItemCache[tokenEntry](tokenTTL, tokenCacheSize, users.now),
		stampTried: map[string]time.Time{},
		held:       held{starts: map[string]heldStart{}, ends: map[string]string{}},
	}
	s.loadToken = s.readToken
	return s
}

func sessionKey(id string) map[string]types.AttributeValue { return key(sessionKeyPrefix + id) }

// token returns what token's key item says, from memory (fresh at now,
// a reading of s.now) or one GetItem.
func (s *Sessions) token(ctx context.Context, now time.Time, token string) (tokenEntry, bool, error) {
	t, found, err := s.tokens.ReadFuncAt(ctx, now, token, s.loadToken)
	if err != nil {
		return t, false, fmt.Errorf("user: session key: %w", err)
	}
	return t, found, nil
}

// readToken reads token's key item (the token cache's miss).
func (s *Sessions) readToken(ctx context.Context, token string) (tokenEntry, bool, error) {
	id := SessionID(token)
	k, found, err := dynamo.GetItem[keyItem](ctx, s.users.db, s.users.table, "user_id", sessionKeyPrefix+id)
	if err != nil || !found || k.UID == "" {
		return tokenEntry{}, false, err
	}
	return tokenEntry{id: id, uid: k.UID}, true, nil
}

// Find is FindCtx without a context.
func (s *Sessions) Find(token string) ([]byte, bool, error) {
	return s.FindCtx(context.Background(), token)
}

// Commit is CommitCtx without a context.
func (s *Sessions) Commit(token string, b []byte, expiry time.Time) error {
	return s.CommitCtx(context.Background(), token, b, expiry)
}

// Delete is DeleteCtx without a context.
func (s *Sessions) Delete(token string) error {
	return s.DeleteCtx(context.Background(), token)
}

// FindCtx returns the data of token's session, found false if there is
// none: no key item, no users row, no entry on the row (ended), or an
// entry past its expiry. A sign-in storage refused to keep is found from
// memory (held). err is a failed read only.
func (s *Sessions) FindCtx(ctx context.Context, token string) ([]byte, bool, error) {
	b, _, found, err := s.FindAccount(ctx, token)
	return b, found, err
}

// Account is the users row a session lives on, as FindAccount read it
// along with the session: UserID is "" when the session was found in
// memory (a held sign-in) and no row was read.
type Account struct {
	// UserID is the row's ID (the user_id partition key).
	UserID string
	// Active is the row's User.Active.
	Active bool
}

// FindAccount is FindCtx that also reports the row the session was found
// on, so that a guard checks the account from the same read: the owner
// photo route's guard makes one cached read of the row and one clock
// reading for the whole lookup (a second read of the row and three more
// readings cost about a tenth of a cached photo's 304).
func (s *Sessions) FindAccount(ctx context.Context, token string) (data []byte, acct Account, found bool, err error) {
	if token == "" {
		return nil, Account{}, false, nil
	}
	now := s.now()
	if s.held.n.Load() > 0 {
		if h, ok := s.heldStart(token); ok {
			return h.e.Data, Account{}, now.Before(h.e.Expires), nil
		}
	}
	t, found, err := s.token(ctx, now, token)
	if err != nil || !found {
		return nil, Account{}, false, err
	}
	if s.held.n.Load() > 0 && s.heldEnd(t.id) {
		return nil, Account{}, false, nil
	}
	r, err := s.users.rowAt(ctx, now, t.uid)
	if errors.Is(err, ErrNotFound) {
		return nil, Account{}, false, nil
	}
	if err != nil {
		return nil, Account{}, false, fmt.Errorf("user: session: %w", err)
	}
	e, ok := r.Sessions[t.id]
	if !ok || !now.Before(e.Expires) {
		return nil, Account{}, false, nil
	}
	return e.Data, Account{UserID: r.ID, Active: r.Active()}, true, nil
}

// CommitCtx keeps b, the session data of token, until expiry. A sign-in
// (ctx from SignIn) starts token's session: its key item, then its entry
// on the users row, ending the account's session seen longest ago beyond
// MaxSessions and any that lapsed; a refusal (the row gone, the account
// not active) is returned, and one of storage (a full disk, no writer
// lease) holds the session in memory (held) until storage takes writes
// again, so the sign-in still answers. A token with a
// session writes only if b changed or the session was last stamped
// StampEvery ago, and a failed stamp is logged and skipped. Any other
// commit of a token without a session (one ended while its request ran)
// writes nothing: an ended session is never started again. Data without
// a user ID ends the token's session.
func (s *Sessions) CommitCtx(ctx context.Context, token string, b []byte, expiry time.Time) error {
	uid := s.userIDOf(b)
	if uid == "" {
		return s.DeleteCtx(ctx, token)
	}
	s.retryHeld(ctx)
	if s.held.n.Load() > 0 {
		if _, ok := s.heldStart(token); ok {
			return nil // written with the other held sign-ins
		}
	}
	t, found, err := s.token(ctx, s.now(), token)
	if err != nil {
		return err
	}
	if !found {
		d, signIn := signingIn(ctx)
		if !signIn {
			return nil // ended meanwhile (or never stored): not revived
		}
		now := s.now()
		e := Session{Data: b, Expires: expiry, Created: now, Seen: now, Device: d}
		err := s.start(ctx, token, uid, e)
		if storage.Refused(err) != nil && s.holdStart(token, uid, e) {
			s.log.Warn("session kept in memory only: storage refuses writes; written once it takes them", "user_id", uid, "err", err)
			return nil
		}
		return err
	}
	if t.uid != uid {
		return fmt.Errorf("user: session: commit of a token that is another account's")
	}
	return s.refresh(ctx, t, b, expiry)
}

// start begins token's session e for uid: the key item first, then the
// entry on the row, so the row never lists a session nothing leads to.
func (s *Sessions) start(ctx context.Context, token, uid string, e Session) error {
	now := s.now()
	id := SessionID(token)
	item, err := attributevalue.MarshalMap(keyItem{UID: uid, Created: now})
	if err != nil {
		return fmt.Errorf("user: session: encode: %w", err)
	}
	item["user_id"] = &types.AttributeValueMemberS{Value: sessionKeyPrefix + id}
	err = s.tokens.WriteThrough(token, tokenEntry{id: id, uid: uid}, func() error {
		_, err := s.users.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.users.table), Item: item})
		return err
	})
	if err != nil {
		return fmt.Errorf("user: session: start: %w", err)
	}
	dropped, err := s.edit(ctx, uid, true, func(m map[string]Session) bool {
		for k, old := range m {
			if !now.Before(old.Expires) {
				delete(m, k)
			}
		}
		for len(m) >= MaxSessions {
			delete(m, oldest(m))
		}
		m[id] = e
		return true
	})
	if err != nil {
		// Nothing leads to the key now; the orphan check would find it.
		s.tokens.Write(token, func() error { return s.deleteKeys(ctx, []string{id}) })
		return fmt.Errorf("user: session: start: %w", err)
	}
	s.dropKeys(ctx, uid, dropped)
	return nil
}

// oldest returns the ID of the session in m seen longest ago (the
// smallest ID among equals, so the choice is the same every time).
func oldest(m map[string]Session) string {
	var id string
	for k, e := range m {
		if id == "" || e.Seen.Before(m[id].Seen) || e.Seen.Equal(m[id].Seen) && k < id {
			id = k
		}
	}
	return id
}

// refresh stamps t's session with b and expiry if b changed or its last
// stamp is StampEvery old, and skips (logging) a stamp that fails.
func (s *Sessions) refresh(ctx context.Context, t tokenEntry, b []byte, expiry time.Time) error {
	r, err := s.users.row(ctx, t.uid)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		s.log.Warn("session not stamped", "user_id", t.uid, "err", err)
		return nil
	}
	e, ok := r.Sessions[t.id]
	now := s.now()
	if !ok || bytes.Equal(e.Data, b) && now.Sub(e.Seen) < StampEvery || !s.mayStamp(t.id, now) {
		return nil
	}
	e.Data, e.Expires, e.Seen = b, expiry, now
	if err := s.stamp(ctx, t.uid, t.id, e); err != nil && !dynamo.IsConditionFailed(err) {
		s.log.Warn("session not stamped", "user_id", t.uid, "err", err)
	}
	return nil
}

// mayStamp reports whether session id's stamp may be tried at now, at
// most once per StampEvery, and records the try.
func (s *Sessions) mayStamp(id string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if at, ok := s.stampTried[id]; ok && now.Sub(at) < StampEvery {
		return false
	}
	if len(s.stampTried) >= tokenCacheSize {
		for k, at := range s.stampTried {
			if now.Sub(at) >= StampEvery {
				delete(s.stampTried, k)
			}
		}
	}
	s.stampTried[id] = now
	return true
}

// stamp writes e as session id's entry on uid's row with one UpdateItem
// of that entry, if the row still lists it (a session ended meanwhile is
// not revived: the condition fails). The row as written stays cached.
func (s *Sessions) stamp(ctx context.Context, uid, id string, e Session) error {
	av, err := attributevalue.Marshal(e)
	if err != nil {
		return fmt.Errorf("user: session: encode: %w", err)
	}
	return s.users.cache.WriteReturning(uid, func() (row, error) {
		out, err := s.users.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 aws.String(s.users.table),
			Key:                       key(uid),
			UpdateExpression:          aws.String("SET #s.#id = :e, #rev = if_not_exists(#rev, :zero) + :one"),
			ConditionExpression:       aws.String("attribute_exists(#s.#id)"),
			ExpressionAttributeNames:  map[string]string{"#s": "sessions", "#id": id, "#rev": "sessions_rev"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":e": av, ":zero": number(0), ":one": number(1)},
			ReturnValues:              types.ReturnValueAllNew,
		})
		if err != nil {
			return row{}, err
		}
		return decodeRow(out.Attributes)
	})
}

func number(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

func decodeRow(item map[string]types.AttributeValue) (row, error) {
	var r row
	if err := attributevalue.UnmarshalMap(item, &r); err != nil {
		return row{}, fmt.Errorf("decode: %w", err)
	}
	return r, nil
}

// edit changes uid's sessions with edit, which gets a copy of the map
// and reports whether it changed it, and writes the whole map back with
// one UpdateItem conditional on the row existing and on the count of
// writes it read (SessionsRev), trying again on a fresh copy when
// another write came first. signIn adds the condition that the account
// is active, or the new row of a move (ErrState otherwise): a session
// never starts on an account being deleted or disabled, or on the old
// row of a move. It returns the IDs the write removed; a
// missing row is ErrNotFound.
func (s *Sessions) edit(ctx context.Context, uid string, signIn bool, edit func(map[string]Session) bool) ([]string, error) {
	r, err := s.users.row(ctx, uid)
	if err != nil {
		return nil, err
	}
	for try := 1; ; try++ {
		if signIn && !r.signsIn() {
			return nil, ErrState
		}
		m := maps.Clone(r.Sessions)
		if m == nil {
			m = map[string]Session{}
		}
		if !edit(m) {
			return nil, nil
		}
		written, err := s.writeSessions(ctx, r, m, signIn)
		if err == nil {
			var removed []string
			for id := range r.Sessions {
				if _, ok := written.Sessions[id]; !ok {
					removed = append(removed, id)
				}
			}
			return removed, nil
		}
		if !dynamo.IsConditionFailed(err) {
			return nil, err
		}
		item, gerr := dynamo.RefusedItem(ctx, s.users.db, s.users.table, key(uid), err)
		switch {
		case gerr != nil:
			return nil, gerr
		case len(item) == 0:
			return nil, ErrNotFound
		case try >= editTries:
			return nil, fmt.Errorf("sessions of %s changed by %d other writes at once", uid, try)
		}
		if r, err = decodeRow(item); err != nil {
			return nil, err
		}
	}
}

// signsIn reports whether a session may start on u: an active account,
// or the new row of a move (whose owner waits on the moving page).
func (u *User) signsIn() bool { return u.Active() || (u.Moving() && u.MoveFrom != "") }

// writeSessions writes m as r's sessions, conditional on the row and its
// SessionsRev being as read (and signsIn, if active), and
// keeps the row as written in the cache.
func (s *Sessions) writeSessions(ctx context.Context, r row, m map[string]Session, active bool) (row, error) {
	// No session is NULL, not an empty map: minidyn stores an empty map
	// as another attribute's value.
	var av types.AttributeValue = &types.AttributeValueMemberNULL{Value: true}
	if len(m) > 0 {
		var err error
		if av, err = attributevalue.Marshal(m); err != nil {
			return row{}, fmt.Errorf("encode: %w", err)
		}
	}
	names := map[string]string{"#id": "user_id", "#s": "sessions", "#rev": "sessions_rev"}
	values := map[string]types.AttributeValue{":m": av, ":next": number(r.SessionsRev + 1)}
	cond := "attribute_exists(#id) AND attribute_not_exists(#rev)"
	if r.SessionsRev != 0 {
		cond = "attribute_exists(#id) AND #rev = :rev"
		values[":rev"] = number(r.SessionsRev)
	}
	if active {
		// The rule of signsIn.
		cond += " AND (attribute_not_exists(#st) OR #st = :active OR (#st = :moving AND attribute_exists(#from)))"
		names["#st"], names["#from"] = "status", "move_from"
		values[":active"] = &types.AttributeValueMemberS{Value: string(StatusActive)}
		values[":moving"] = &types.AttributeValueMemberS{Value: string(StatusMoving)}
	}
	var written row
	err := s.users.cache.WriteReturning(r.ID, func() (row, error) {
		out, err := s.users.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                           aws.String(s.users.table),
			Key:                                 key(r.ID),
			UpdateExpression:                    aws.String("SET #s = :m, #rev = :next"),
			ConditionExpression:                 aws.String(cond),
			ExpressionAttributeNames:            names,
			ExpressionAttributeValues:           values,
			ReturnValues:                        types.ReturnValueAllNew,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		if err != nil {
			return row{}, err
		}
		written, err = decodeRow(out.Attributes)
		return written, err
	})
	return written, err
}

// DeleteCtx ends token's session: its entry leaves the users row (from
// then on no lookup finds it), then its key item goes. No session is no
// error. If storage refuses the write (a full disk), the session ends in
// this process at once and the write is tried again later.
func (s *Sessions) DeleteCtx(ctx context.Context, token string) error {
	s.retryHeld(ctx)
	if s.held.n.Load() > 0 && s.dropHeldStart(token) {
		// Held in memory only; its key, if that write went through, is
		// deleted too (else the orphan check finds it).
		s.dropKeys(ctx, "", []string{SessionID(token)})
		return nil
	}
	t, found, err := s.token(ctx, s.now(), token)
	if err != nil || !found {
		return err
	}
	err = s.end(ctx, t.uid, t.id)
	s.tokens.Invalidate(token)
	if storage.Refused(err) != nil && s.holdEnd(t.id, t.uid) {
		s.log.Warn("session ended in memory only: storage refuses writes; written once it takes them", "user_id", t.uid, "err", err)
		return nil
	}
	return err
}

// end removes session id from uid's row and then deletes its key item. A
// missing row or entry is no error; the key is deleted all the same.
func (s *Sessions) end(ctx context.Context, uid, id string) error {
	_, err := s.edit(ctx, uid, false, func(m map[string]Session) bool {
		if _, ok := m[id]; !ok {
			return false
		}
		delete(m, id)
		return true
	})
	if err != nil && !errors.Is(err, ErrNotFound) {
		return fmt.Errorf("user: session: end: %w", err)
	}
	s.dropKeys(ctx, uid, []string{id})
	return nil
}

// End signs out uid's session id (the account page's per-device sign
// out). It returns ErrNoSession if uid has no live session id.
func (s *Sessions) End(ctx context.Context, uid, id string) error {
	if s.dropHeldID(uid, id) {
		return nil
	}
	list, err := s.List(ctx, uid)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(list, func(d SignedIn) bool { return d.ID == id }) {
		return fmt.Errorf("user: session: end: %w", ErrNoSession)
	}
	return s.end(ctx, uid, id)
}

// EndAll signs out every session of uid ("sign out everywhere", an
// account disabled): the row's map is emptied with one write, so none is
// found from the next request on, then the key items go. It returns how
// many sessions it ended; a missing row ends none.
func (s *Sessions) EndAll(ctx context.Context, uid string) (int, error) {
	n := s.dropHeldOf(uid)
	removed, err := s.edit(ctx, uid, false, func(m map[string]Session) bool {
		if len(m) == 0 {
			return false
		}
		clear(m)
		return true
	})
	if errors.Is(err, ErrNotFound) {
		return n, nil
	}
	if err != nil {
		return n, fmt.Errorf("user: sessions: end all: %w", err)
	}
	s.dropKeys(ctx, uid, removed)
	return n + len(removed), nil
}

// DeleteKeys deletes every session key item that names uid (the
// sessions step of account deletion, before the row itself goes, which
// takes the entries with it): found by a Scan of the key items, not from
// the row, so a key an earlier end failed to delete goes too, and
// deleted with batch writes. Keys already gone are no error, so the step
// can be re-run; it returns how many it deleted. The Scan reads every
// key item of the table (at most MaxSessions per account), strongly
// consistent like every read of a deletion: account
// deletion is rare, and no page view pays for it.
func (s *Sessions) DeleteKeys(ctx context.Context, uid string) (int, error) {
	keys, err := s.keysOf(ctx, uid)
	if err != nil {
		return 0, fmt.Errorf("user: session keys: %w", err)
	}
	if _, err := dynamo.BatchDelete(ctx, s.users.db, s.users.table, keys); err != nil {
		return 0, fmt.Errorf("user: session keys: %w", err)
	}
	return len(keys), nil
}

// keysOf returns the keys of the session key items that name uid, by a
// Scan filtered on them.
func (s *Sessions) keysOf(ctx context.Context, uid string) ([]map[string]types.AttributeValue, error) {
	expr, err := expression.NewBuilder().
		WithFilter(expression.BeginsWith(expression.Name("user_id"), sessionKeyPrefix).And(expression.Name("uid").Equal(expression.Value(uid)))).
		WithProjection(expression.NamesList(expression.Name("user_id"))).Build()
	if err != nil {
		return nil, err
	}
	items, err := dynamo.ScanAll[struct {
		Key string `dynamodbav:"user_id"`
	}](ctx, s.users.db, &dynamodb.ScanInput{
		TableName: aws.String(s.users.table), Limit: s.users.limit(), ConsistentRead: aws.Bool(true),
		FilterExpression: expr.Filter(), ProjectionExpression: expr.Projection(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	})
	if err != nil {
		return nil, err
	}
	keys := make([]map[string]types.AttributeValue, len(items))
	for i, it := range items {
		keys[i] = key(it.Key)
	}
	return keys, nil
}

// deleteKeys deletes the key items of ids: one DeleteItem for one, a
// batch for more.
func (s *Sessions) deleteKeys(ctx context.Context, ids []string) error {
	switch len(ids) {
	case 0:
		return nil
	case 1:
		_, err := s.users.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(s.users.table), Key: sessionKey(ids[0])})
		return err
	}
	keys := make([]map[string]types.AttributeValue, len(ids))
	for i, id := range ids {
		keys[i] = sessionKey(id)
	}
	_, err := dynamo.BatchDelete(ctx, s.users.db, s.users.table, keys)
	return err
}

// dropKeys deletes the key items of sessions already gone from uid's
// row. A failure leaves keys that lead nowhere (the orphan check finds
// them) and is logged, not returned: the sessions have ended.
func (s *Sessions) dropKeys(ctx context.Context, uid string, ids []string) {
	if err := s.deleteKeys(ctx, ids); err != nil {
		s.log.Warn("session keys not deleted; the orphan check finds them", "user_id", uid, "sessions", len(ids), "err", err)
	}
}

// List returns uid's live sessions, the one seen last first; none for a
// missing row.
func (s *Sessions) List(ctx context.Context, uid string) ([]SignedIn, error) {
	r, err := s.users.row(ctx, uid)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("user: sessions: %w", err)
	}
	now := s.now()
	list := s.heldOf(uid)
	for id, e := range r.Sessions {
		if now.Before(e.Expires) && !s.heldEnd(id) {
			list = append(list, SignedIn{ID: id, Device: e.Device, Created: e.Created, Seen: e.Seen})
		}
	}
	slices.SortFunc(list, func(a, b SignedIn) int {
		if c := b.Seen.Compare(a.Seen); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return list, nil
}
