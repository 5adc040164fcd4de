package user

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"ndiro/internal/dynamo"
	"ndiro/internal/web"
)

// Usage is what an account stores, as its quota counts it: Meals its
// meals rows (idempotency claims are no meals) and PhotoBytes the bytes
// of its photo objects under its user prefix, every copy (pending
// uploads and staged imports are not counted). On the users row they
// are meal_count and photo_bytes; as an argument of AddUsage, a change.
type Usage struct {
	Meals      int64 `dynamodbav:"meal_count,omitempty"`
	PhotoBytes int64 `dynamodbav:"photo_bytes,omitempty"`
}

// AddUsage adds add (negative to take away) to the account id's Usage
// with one UpdateItem (ADD: writes at once never lose one another's),
// moving UsageRev on, on the condition that the row exists (ErrNotFound:
// no row is made for an account gone), and returns the Usage as written.
// The row as written stays cached, so the next request's guard reads no
// item. A zero add writes nothing and returns the zero Usage.
func (s *Store) AddUsage(ctx context.Context, id string, add Usage) (Usage, error) {
	if add == (Usage{}) {
		return Usage{}, nil
	}
	var written row
	err := s.cache.WriteReturning(id, func() (row, error) {
		out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 aws.String(s.table),
			Key:                       key(id),
			UpdateExpression:          aws.String("ADD #m :m, #b :b, #rev :one"),
			ConditionExpression:       aws.String("attribute_exists(#id)"),
			ExpressionAttributeNames:  map[string]string{"#id": "user_id", "#m": "meal_count", "#b": "photo_bytes", "#rev": "usage_rev"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":m": number(add.Meals), ":b": number(add.PhotoBytes), ":one": number(1)},
			ReturnValues:              types.ReturnValueAllNew,
		})
		if err != nil {
			return row{}, err
		}
		written, err = decodeRow(out.Attributes)
		return written, err
	})
	if dynamo.IsConditionFailed(err) {
		return Usage{}, fmt.Errorf("user: add usage: %w", ErrNotFound)
	}
	if err != nil {
		return Usage{}, fmt.Errorf("user: add usage: %w", err)
	}
	return written.Usage, nil
}

// RepairUsage sets the account id's Usage to counted, a recount of its
// meals and objects (the admin monitor), with one UpdateItem conditional
// on UsageRev still being seenRev, as read before the recount began (no
// write has changed the usage since), on the account being active (a
// move copies rows without counting them; a deletion removes the row)
// and on no import running (an import adds its meals' usage when it
// saves its state, SaveImport). It reports whether it wrote; a refused
// condition is false and no error.
func (s *Store) RepairUsage(ctx context.Context, id string, seenRev int64, counted Usage) (bool, error) {
	names := map[string]string{"#id": "user_id", "#m": "meal_count", "#b": "photo_bytes", "#rev": "usage_rev",
		"#st": "status", "#imp": "import", "#state": "state"}
	values := map[string]types.AttributeValue{":m": number(counted.Meals), ":b": number(counted.PhotoBytes), ":next": number(seenRev + 1),
		":active": &types.AttributeValueMemberS{Value: string(StatusActive)}, ":running": &types.AttributeValueMemberS{Value: string(ImportRunning)}}
	cond := "attribute_exists(#id) AND attribute_not_exists(#rev)"
	if seenRev != 0 {
		cond = "attribute_exists(#id) AND #rev = :rev"
		values[":rev"] = number(seenRev)
	}
	cond += " AND (attribute_not_exists(#st) OR #st = :active) AND (attribute_not_exists(#imp.#state) OR #imp.#state <> :running)"
	err := s.cache.Write(id, func() error {
		_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 aws.String(s.table),
			Key:                       key(id),
			UpdateExpression:          aws.String("SET #m = :m, #b = :b, #rev = :next"),
			ConditionExpression:       aws.String(cond),
			ExpressionAttributeNames:  names,
			ExpressionAttributeValues: values,
		})
		return err
	})
	if dynamo.IsConditionFailed(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("user: repair usage: %w", err)
	}
	return true, nil
}

// Quota bounds what one account stores (NDIRO_QUOTA_MEALS and
// NDIRO_QUOTA_BYTES): Meals its meals, PhotoBytes its photos' bytes. It
// is checked against the Usage on the users row the request's guard has
// read already, so a check reads nothing; writes in flight at once may
// each pass it, so an account may end past a bound by what they add. A
// zero field bounds nothing.
type Quota struct {
	Meals, PhotoBytes int64
}

// ErrQuota is the cause of Quota's refusals.
var ErrQuota = errors.New("user: quota reached")

// Reached says which of q's bounds an account at u has reached, as the
// end of a sentence ("it holds 100,000 meals, as many as this server
// keeps for one account (NDIRO_QUOTA_MEALS)"), or "" if neither; photos
// is set for the bytes' bound. photoOnly looks at the bytes alone (a
// photo for a meal that exists); else a new meal is refused at either.
func (q Quota) Reached(u Usage, photoOnly bool) (why string, photos bool) {
	switch {
	case !photoOnly && q.Meals > 0 && u.Meals >= q.Meals:
		meals := " meals"
		if u.Meals == 1 {
			meals = " meal"
		}
		return "it holds " + grouped(u.Meals) + meals + ", as many as this server keeps for one account (NDIRO_QUOTA_MEALS)", false
	case q.PhotoBytes > 0 && u.PhotoBytes >= q.PhotoBytes:
		return "its photos take " + web.Bytes(u.PhotoBytes) + ", as much as this server keeps for one account (NDIRO_QUOTA_BYTES)", true
	}
	return "", false
}

// Message says, for a write an account at u may not make under q
// (Reached), which bound is reached, that nothing was saved and what to
// do; "" if it may.
func (q Quota) Message(u Usage, photoOnly bool) string {
	why, photos := q.Reached(u, photoOnly)
	if why == "" {
		return ""
	}
	what := "meals you no longer need"
	if photos {
		what = "photos or meals you no longer need (a meal's edit form removes its photo)"
	}
	return "Your diary is full: " + why + ", so nothing was saved. Delete " + what + ", or ask whoever runs this server to raise the limit."
}

// Refuse returns the 403 page of Message, wrapping ErrQuota, for a write
// an account at u may not make under q; nil if it may.
func (q Quota) Refuse(u Usage, photoOnly bool) error {
	msg := q.Message(u, photoOnly)
	if msg == "" {
		return nil
	}
	return &web.Error{Status: http.StatusForbidden, Title: "Your diary is full", Msg: msg, Err: ErrQuota}
}

// grouped writes n with a comma every three digits: "100,000".
func grouped(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	out := make([]byte, 0, len(s)+len(s)/3+1)
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}
