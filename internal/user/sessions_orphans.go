package user

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"ndiro/internal/dynamo"
)

// DanglingKey is a session key item no live session is behind: its
// account's row is gone, or the row lists no session under its ID (an
// end or a sign-in whose second write failed). It leads nowhere (a
// lookup needs the row's entry), so it is harmless but left over; the
// admin monitor's orphan check finds and deletes it.
type DanglingKey struct {
	// ID is the session ID (SessionID: a digest, never a token).
	ID string
	// UID is the account the key names; Created when it was written.
	UID     string
	Created time.Time
}

// scanned is one item of the users table as DanglingSessionKeys reads
// it: a row (its sessions) or a session key item (uid, at).
type scanned struct {
	Key      string             `dynamodbav:"user_id"`
	UID      string             `dynamodbav:"uid"`
	Created  time.Time          `dynamodbav:"at"`
	Sessions map[string]Session `dynamodbav:"sessions"`
}

// DanglingSessionKeys reads the whole users table once, by a paced Scan
// (rows and session key items alike; the lease item is skipped), and
// returns the session key items no row lists, sorted as scanned.
func (s *Store) DanglingSessionKeys(ctx context.Context, pace dynamo.Pace) ([]DanglingKey, error) {
	listed := map[string]bool{} // session IDs the rows list
	rows := map[string]bool{}
	var keys []DanglingKey
	err := dynamo.ScanPaced(ctx, s.db, &dynamodb.ScanInput{
		TableName: aws.String(s.table), Limit: s.limit(), ConsistentRead: aws.Bool(true),
	}, pace, func(out *dynamodb.ScanOutput) error {
		for _, it := range out.Items {
			var x scanned
			if err := attributevalue.UnmarshalMap(it, &x); err != nil {
				return fmt.Errorf("decode: %w", err)
			}
			switch id, isKey := strings.CutPrefix(x.Key, sessionKeyPrefix); {
			case isKey:
				keys = append(keys, DanglingKey{ID: id, UID: x.UID, Created: x.Created})
			case !Reserved(x.Key):
				rows[x.Key] = true
				for sid := range x.Sessions {
					listed[sid] = true
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("user: session keys: %w", err)
	}
	out := keys[:0]
	for _, k := range keys {
		if !rows[k.UID] || !listed[k.ID] {
			out = append(out, k)
		}
	}
	return out, nil
}

// DeleteDanglingSessionKey deletes the key item of session id if it is
// still dangling when read again now (strongly consistent: the key, then
// its account's row) and was written before before (a sign-in writes its
// key first, its entry on the row second: a young key may be half-way).
// It reports whether it deleted the key; a key already gone is no error.
func (s *Store) DeleteDanglingSessionKey(ctx context.Context, id string, before time.Time) (bool, error) {
	k, found, err := dynamo.GetItem[keyItem](ctx, s.db, s.table, "user_id", sessionKeyPrefix+id)
	if err != nil || !found || !k.Created.Before(before) {
		return false, err
	}
	r, err := s.row(ctx, k.UID)
	switch {
	case errors.Is(err, ErrNotFound):
	case err != nil:
		return false, err
	default:
		if _, listed := r.Sessions[id]; listed {
			return false, nil
		}
	}
	_, err = s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                 aws.String(s.table),
		Key:                       sessionKey(id),
		ConditionExpression:       aws.String("#at = :at"),
		ExpressionAttributeNames:  map[string]string{"#at": "at"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":at": mustTime(k.Created)},
	})
	if dynamo.IsConditionFailed(err) {
		return false, nil // written again meanwhile
	}
	if err != nil {
		return false, fmt.Errorf("user: session key: delete: %w", err)
	}
	return true, nil
}

// mustTime is t as attributevalue stores a time.Time (RFC 3339 text).
func mustTime(t time.Time) types.AttributeValue {
	av, err := attributevalue.Marshal(t)
	if err != nil {
		panic(err)
	}
	return av
}
