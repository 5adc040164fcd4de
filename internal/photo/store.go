package photo

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// Size names one of the two stored copies of a photo.
type Size string

const (
	SizeDisplay Size = "display" // long edge ≤ DisplaySide
	SizeThumb   Size = "thumb"   // long edge ≤ ThumbSide
)

// ParseSize reads the ?size= parameter: "thumb", or "" / "display".
func ParseSize(s string) (Size, bool) {
	switch s {
	case "", "display":
		return SizeDisplay, true
	case "thumb":
		return SizeThumb, true
	}
	return "", false
}

// Key returns the S3 key of a meal photo copy:
// "users/{userID}/meals/{date}/{mealID}.jpg" or "….thumb.jpg". Keys are only
// ever built here, on the server, from a signed-in user's ID and a date and
// meal ID the caller has validated; no key or path from a client is used.
func Key(userID, date, mealID string, size Size) string {
	ext := ".jpg"
	if size == SizeThumb {
		ext = ".thumb.jpg"
	}
	return UserPrefix(userID) + "meals/" + date + "/" + mealID + ext
}

// UserPrefix returns "users/{userID}/", under which all of a user's objects
// live (account deletion removes the prefix).
func UserPrefix(userID string) string { return "users/" + userID + "/" }

// ErrNotFound is returned for a photo object that does not exist.
var ErrNotFound = errors.New("photo not found")

// ErrOutsidePrefix is returned when a key does not lie under the owner's
// prefix: the reader refuses it whatever its origin.
var ErrOutsidePrefix = errors.New("photo key outside the owner's prefix")

// Version is photo_v: the Unix time in nanoseconds when the photo's bytes
// last changed. 0 means no photo.
type Version int64

// Tag returns the short digest of v used in ?v= and ETags: 12 hex
// characters.
func (v Version) Tag() string {
	sum := sha256.Sum256([]byte("photo_v:" + strconv.FormatInt(int64(v), 10)))
	return hex.EncodeToString(sum[:6])
}

// metaVersion is the object metadata key (x-amz-meta-photo-v) carrying the
// photo_v the bytes belong to.
const metaVersion = "photo-v"

// Object is one stored photo copy with the version its bytes belong to.
type Object struct {
	Body    []byte
	Version Version
}

// Store reads and writes photo objects in the private bucket.
type Store struct {
	s3     *s3.Client
	bucket string
}

// NewStore returns a Store on bucket.
func NewStore(client *s3.Client, bucket string) *Store {
	return &Store{s3: client, bucket: bucket}
}

// Put stores body under key as image/jpeg, tagged with version v.
func (s *Store) Put(ctx context.Context, key string, body []byte, v Version) error {
	_, err := s.s3.PutObject(ctx, &s3.PutObjectInput{
		Bucket:        aws.String(s.bucket),
		Key:           aws.String(key),
		Body:          bytes.NewReader(body),
		ContentLength: aws.Int64(int64(len(body))),
		ContentType:   aws.String("image/jpeg"),
		Metadata:      map[string]string{metaVersion: strconv.FormatInt(int64(v), 10)},
	})
	if err != nil {
		return fmt.Errorf("photo: put %s: %w", key, err)
	}
	return nil
}

// Get reads the object key, which must lie under ownerID's prefix
// (ErrOutsidePrefix otherwise, before any request), or returns ErrNotFound.
func (s *Store) Get(ctx context.Context, ownerID, key string) (*Object, error) {
	if !underPrefix(ownerID, key) {
		return nil, ErrOutsidePrefix
	}
	out, err := s.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	var nsk *types.NoSuchKey
	if errors.As(err, &nsk) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("photo: get: %w", err)
	}
	defer out.Body.Close()
	body, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, fmt.Errorf("photo: get: read: %w", err)
	}
	v, _ := strconv.ParseInt(metadata(out.Metadata, metaVersion), 10, 64)
	return &Object{Body: body, Version: Version(v)}, nil
}

// metadata looks a user-metadata key up case-insensitively: S3 returns
// them lower-cased, some S3-compatible servers canonicalise them.
func metadata(m map[string]string, key string) string {
	for k, v := range m {
		if strings.EqualFold(k, key) {
			return v
		}
	}
	return ""
}

// Delete removes the objects keys, each of which must lie under ownerID's
// prefix. Missing objects are not an error, so a deletion can be re-run.
func (s *Store) Delete(ctx context.Context, ownerID string, keys ...string) error {
	for _, k := range keys {
		if !underPrefix(ownerID, k) {
			return ErrOutsidePrefix
		}
		if _, err := s.s3.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(k)}); err != nil {
			return fmt.Errorf("photo: delete %s: %w", k, err)
		}
	}
	return nil
}

// underPrefix reports whether key lies under ownerID's prefix, with no path
// tricks in either.
func underPrefix(ownerID, key string) bool {
	if ownerID == "" || strings.ContainsAny(ownerID, "/\\") || strings.Contains(key, "..") || strings.Contains(key, "//") {
		return false
	}
	return strings.HasPrefix(key, UserPrefix(ownerID)) && len(key) > len(UserPrefix(ownerID))
}
