package photo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"ndiro/internal/token"
)

// PendingTTL is how long an upload is kept while its form is corrected
// (DESIGN.md, photos): the bucket's lifecycle rule expires pending/ after
// a day (deploy/terraform), local mode sweeps it at start, and the app
// refuses an older one itself, as lifecycle rules run late.
const PendingTTL = 24 * time.Hour

// ErrPendingGone is returned for a pending upload that does not exist,
// belongs to someone else, or is older than PendingTTL.
var ErrPendingGone = errors.New("the kept photo has expired or does not exist")

// Metadata keys of a pending upload's display copy, carrying what the meal
// row needs once the form is saved.
const (
	metaWidth       = "photo-w"
	metaHeight      = "photo-h"
	metaThumbWidth  = "thumb-w"
	metaThumbHeight = "thumb-h"
	metaTaken       = "taken"
	metaSum         = "sha256"
)

// PendingKey returns the key of a pending upload's copy:
// "pending/{userID}/{token}.jpg" or "….thumb.jpg". The token is the
// server's (token.New); the owner never names a key.
func PendingKey(userID, tok string, size Size) string {
	ext := ".jpg"
	if size == SizeThumb {
		ext = ".thumb.jpg"
	}
	return PendingPrefix(userID) + tok + ext
}

// KeepPending stores both copies of p as a pending upload of userID and
// returns its new token. sum, the hex SHA-256 of the bytes p was made
// from ("" if not known), is kept with it (Pending.Sum).
func (s *Store) KeepPending(ctx context.Context, userID string, p *Processed, sum string) (string, error) {
	tok := token.New()
	meta := map[string]string{
		metaWidth: strconv.Itoa(p.Width), metaHeight: strconv.Itoa(p.Height),
		metaThumbWidth: strconv.Itoa(p.ThumbWidth), metaThumbHeight: strconv.Itoa(p.ThumbHeight),
	}
	if sum != "" {
		meta[metaSum] = sum
	}
	if !p.Taken.IsZero() {
		meta[metaTaken] = p.Taken.Format("2006-01-02T15:04:05")
	}
	for _, c := range []struct {
		size Size
		body []byte
	}{{SizeDisplay, p.Display}, {SizeThumb, p.Thumb}} {
		_, err := s.s3.PutObject(ctx, &s3.PutObjectInput{
			Bucket:        aws.String(s.bucket),
			Key:           aws.String(PendingKey(userID, tok, c.size)),
			Body:          bytes.NewReader(c.body),
			ContentLength: aws.Int64(int64(len(c.body))),
			ContentType:   aws.String("image/jpeg"),
			Metadata:      meta,
		})
		if err != nil {
			return "", fmt.Errorf("photo: keep pending: %w", err)
		}
	}
	return tok, nil
}

// Pending is a kept upload as the form needs it: the sizes and capture time
// of its copies, without their bytes.
type Pending struct {
	Token                                  string
	Width, Height, ThumbWidth, ThumbHeight int
	Taken                                  time.Time
	// Sum is the hex SHA-256 of the upload's bytes as sent, as given to
	// KeepPending; "" if none was.
	Sum string
	// Bytes is the length of its two copies together, as stored.
	Bytes int64
}

// LookPending returns the pending upload tok of userID, or ErrPendingGone
// if it is missing, malformed or older than PendingTTL at now.
func (s *Store) LookPending(ctx context.Context, userID, tok string, now time.Time) (*Pending, error) {
	if !token.Valid(tok) || userID == "" {
		return nil, ErrPendingGone
	}
	var (
		p    *Pending
		size int64
	)
	for _, part := range []Size{SizeDisplay, SizeThumb} {
		out, err := s.s3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(PendingKey(userID, tok, part))})
		var nf *types.NotFound
		if errors.As(err, &nf) || isNoSuchKey(err) {
			return nil, ErrPendingGone
		}
		if err != nil {
			return nil, fmt.Errorf("photo: pending: %w", err)
		}
		if now.Sub(aws.ToTime(out.LastModified)) > PendingTTL {
			return nil, ErrPendingGone
		}
		size += aws.ToInt64(out.ContentLength)
		if part == SizeDisplay {
			num := func(k string) int { n, _ := strconv.Atoi(metadata(out.Metadata, k)); return n }
			p = &Pending{Token: tok, Width: num(metaWidth), Height: num(metaHeight), ThumbWidth: num(metaThumbWidth), ThumbHeight: num(metaThumbHeight)}
			p.Taken, _ = time.Parse("2006-01-02T15:04:05", metadata(out.Metadata, metaTaken))
			p.Sum = metadata(out.Metadata, metaSum)
		}
	}
	if p.Width <= 0 || p.Height <= 0 || p.ThumbWidth <= 0 || p.ThumbHeight <= 0 {
		return nil, ErrPendingGone
	}
	p.Bytes = size
	return p, nil
}

// AdoptPending copies the pending upload tok of userID, server-side, to
// keys (display, thumbnail: Key's) as the photo of version v, tagged as Put
// tags it. The pending copies stay until DropPending, so a failure after
// this leaves the form's photo usable.
func (s *Store) AdoptPending(ctx context.Context, userID, tok string, keys []string, v Version) error {
	if len(keys) != 2 {
		return fmt.Errorf("photo: adopt pending: want 2 keys, got %d", len(keys))
	}
	for i, size := range []Size{SizeDisplay, SizeThumb} {
		if !underPrefix(userID, keys[i]) || !token.Valid(tok) {
			return ErrOutsidePrefix
		}
		_, err := s.s3.CopyObject(ctx, &s3.CopyObjectInput{
			Bucket:            aws.String(s.bucket),
			Key:               aws.String(keys[i]),
			CopySource:        aws.String(copySource(s.bucket, PendingKey(userID, tok, size))),
			MetadataDirective: types.MetadataDirectiveReplace,
			ContentType:       aws.String("image/jpeg"),
			Metadata:          map[string]string{metaVersion: strconv.FormatInt(int64(v), 10)},
		})
		if isNoSuchKey(err) {
			return ErrPendingGone
		}
		if err != nil {
			return fmt.Errorf("photo: adopt pending: %w", err)
		}
	}
	return nil
}

// DropPending deletes both copies of the pending upload tok of userID.
func (s *Store) DropPending(ctx context.Context, userID, tok string) error {
	if !token.Valid(tok) {
		return ErrPendingGone
	}
	return s.Delete(ctx, userID, PendingKey(userID, tok, SizeDisplay), PendingKey(userID, tok, SizeThumb))
}

// SweepPending deletes every pending upload older than PendingTTL at now,
// as the bucket's lifecycle rule does in AWS (local mode runs it at start),
// and returns how many objects it deleted. A staged archive's parts (StagedPart)
// are kept for StagedTTL instead: its import may run, and resume after
// restarts, for longer than a form's upload waits, and the import deletes
// it when it ends.
func (s *Store) SweepPending(ctx context.Context, now time.Time) (int, error) {
	n := 0
	err := s.List(ctx, "pending/", func(context.Context, int) error { return nil }, func(o ObjectInfo) error {
		ttl := PendingTTL
		if isImportKey(o.Key) {
			ttl = StagedTTL
		}
		if now.Sub(o.Modified) <= ttl {
			return nil
		}
		owner, ok := OwnerOfKey(o.Key)
		if !ok {
			return nil // no user ID makes this key: not ndiro's to delete
		}
		if err := s.Delete(ctx, owner, o.Key); err != nil {
			return err
		}
		n++
		return nil
	})
	if err != nil {
		return n, fmt.Errorf("photo: sweep pending: %w", err)
	}
	return n, nil
}
