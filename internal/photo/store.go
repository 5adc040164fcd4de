package photo

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"golang.org/x/sync/errgroup"
)

// Size names one stored copy of a photo, a variant (variant.go): the
// display copy "display", the thumbnail "thumb", or a sized copy such as
// "t320.webp" (a 320 px square WebP) or "d1080.jpg" (a JPEG 1080 px on
// its long edge). It is the ?size= of the copy's URL and ends its S3 key.
type Size string

const (
	SizeDisplay Size = "display" // long edge ≤ DisplaySide
	SizeThumb   Size = "thumb"   // long edge ≤ ThumbSide
)

// ParseSize reads the ?size= parameter: "" (the display copy) or the name
// of a variant ("display", "thumb", "t320.webp", …); false for anything
// else.
func ParseSize(s string) (Size, bool) {
	if s == "" {
		return SizeDisplay, true
	}
	if _, _, ok := variantOf(Size(s)); ok {
		return Size(s), true
	}
	return "", false
}

// Key returns the S3 key of a meal photo copy:
// "users/{userID}/meals/{date}/{mealID}.jpg" for the display copy,
// "….thumb.jpg" for the thumbnail, "….t320.webp" and the like for the
// sized copies (variant.go), the user ID escaped as keyID does; an
// unknown size is the display copy's. Keys are only ever built here
// (laid out by appendKey, which Server.Serve also uses for its
// stack-buffer key), on the server, from a signed-in user's ID and a
// date and meal ID the caller has validated; no key or path from a
// client is used.
func Key(userID, date, mealID string, size Size) string {
	var b [keyBuffer]byte
	return string(appendKey(b[:0], userID, date, mealID, size)) // one allocation
}

// keyBuffer is the size of the stack buffers keys are built in: enough
// for any key of a user ID up to 80 bytes (Google's are 21 digits).
// Longer keys are built on the heap.
const keyBuffer = 128

// appendKey appends Key(userID, date, mealID, size) to b: the one place
// that lays a meal photo's key out.
func appendKey(b []byte, userID, date, mealID string, size Size) []byte {
	b = append(b, "users/"...)
	b = append(b, keyID(userID)...)
	b = append(b, "/meals/"...)
	b = append(b, date...)
	b = append(b, '/')
	b = append(b, mealID...)
	switch size {
	case SizeDisplay:
	case SizeThumb:
		return append(b, ".thumb.jpg"...)
	default:
		if v, _, ok := variantOf(size); ok {
			return append(b, v.suffix...)
		}
	}
	return append(b, ".jpg"...)
}

// Ref names one copy of a meal's photo: its owner's user ID, the meal's
// date and ID (both checked by the caller: meal.ParseDate, meal.ParseID)
// and the size. Its S3 key is Key(Owner, Date, Meal, Size).
type Ref struct {
	Owner, Date, Meal string
	Size              Size
}

// UserPrefix returns "users/{userID}/" (the ID escaped as keyID does), under
// which all of a user's photos live (account deletion removes the prefix).
func UserPrefix(userID string) string { return "users/" + keyID(userID) + "/" }

// keyID is a user ID as it appears in S3 keys. The ID is the provider's
// "sub", which OIDC allows to be any string, so '%', '/' and '\' are
// escaped as %25, %2F and %5C: every ID makes exactly one path segment, and
// no user's prefix lies inside another's ("users/a/" must not hold the
// objects of user "a/b"). An ID that is "." or holds ".." has its dots
// escaped too (%2E), so no key holds a dot segment that a URL cleaner
// would fold. Every other character is kept, so the keys of IDs without
// those (Google's are digits) are the plain ID.
//
// Before this escaping, an ID holding '/' or ".." could not reach its
// photos, and one holding '%' or '\' had it in its keys unescaped: none
// such is known to have been used.
func keyID(userID string) string {
	dots := userID == "." || strings.Contains(userID, "..")
	if !dots && !strings.ContainsAny(userID, `%/\`) {
		return userID
	}
	var b strings.Builder
	for i := 0; i < len(userID); i++ {
		switch c := userID[i]; {
		case c == '%':
			b.WriteString("%25")
		case c == '/':
			b.WriteString("%2F")
		case c == '\\':
			b.WriteString("%5C")
		case c == '.' && dots:
			b.WriteString("%2E")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// idOfKey undoes keyID for the segment seg of a key; ok is false for a
// segment keyID cannot have made.
func idOfKey(seg string) (id string, ok bool) {
	id = unescapeKeyID.Replace(seg)
	return id, id != "" && keyID(id) == seg
}

var unescapeKeyID = strings.NewReplacer("%25", "%", "%2F", "/", "%5C", `\`, "%2E", ".")

// OwnerOfKey returns the user ID whose prefix (UserPrefix or
// PendingPrefix) holds key; ok is false for a key under neither.
func OwnerOfKey(key string) (userID string, ok bool) {
	rest, found := strings.CutPrefix(key, "users/")
	if !found {
		if rest, found = strings.CutPrefix(key, "pending/"); !found {
			return "", false
		}
	}
	seg, _, found := strings.Cut(rest, "/")
	if !found {
		return "", false
	}
	return idOfKey(seg)
}

// ParseKey splits a photo key built by Key into its owner, date, meal ID
// and size; ok is false for any other key.
func ParseKey(key string) (userID, date, mealID string, size Size, ok bool) {
	parts := strings.Split(key, "/")
	if len(parts) != 5 || parts[0] != "users" || parts[1] == "" || parts[2] != "meals" {
		return "", "", "", "", false
	}
	size, mealID, ok = sizeOfKeySuffix(parts[4])
	if !ok {
		return "", "", "", "", false
	}
	id, ok := idOfKey(parts[1])
	if !ok || mealID == "" || Key(id, parts[3], mealID, size) != key {
		return "", "", "", "", false
	}
	return id, parts[3], mealID, size, true
}

// PendingPrefix returns "pending/{userID}/" (the ID escaped as keyID
// does), under which a user's
// short-lived uploads wait while a form is corrected (DESIGN.md, photos);
// a lifecycle rule expires them.
func PendingPrefix(userID string) string { return "pending/" + keyID(userID) + "/" }

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
	// tag is Version.Tag(), etag the ETag header value for the copy,
	// length its Content-Length and contentType its Content-Type (the
	// size's, ContentType), worked out once when the object is read
	// (Store.Get, the only maker of served objects), not on every request
	// that serves it from the cache.
	tag                       string
	etag, length, contentType []string
}

// Store reads and writes photo objects in the private bucket.
type Store struct {
	s3     *s3.Client
	bucket string
	// partSize is the size of Stage's part objects (StagePartSize unless
	// SetStagePartSize changed it).
	partSize atomic.Int64
}

// NewStore returns a Store on bucket.
func NewStore(client *s3.Client, bucket string) *Store {
	s := &Store{s3: client, bucket: bucket}
	s.partSize.Store(StagePartSize)
	return s
}

// SetStagePartSize makes Stage put parts of n bytes (at least 1) from
// now on, instead of StagePartSize: tests stage a small archive as many
// parts. What is staged already keeps the size it records (Staged).
func (s *Store) SetStagePartSize(n int64) { s.partSize.Store(max(n, 1)) }

// Put stores body under key, tagged with version v, as the content type
// of the key's size (ContentType: image/webp for a WebP copy, else
// image/jpeg).
func (s *Store) Put(ctx context.Context, key string, body []byte, v Version) error {
	size := SizeDisplay
	if file := key[strings.LastIndexByte(key, '/')+1:]; file != "" {
		size, _, _ = sizeOfKeySuffix(file)
	}
	_, err := s.s3.PutObject(ctx, &s3.PutObjectInput{
		Bucket:        aws.String(s.bucket),
		Key:           aws.String(key),
		Body:          bytes.NewReader(body),
		ContentLength: aws.Int64(int64(len(body))),
		ContentType:   aws.String(ContentType(size)),
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
	if isNoSuchKey(err) {
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
	tag := Version(v).Tag()
	size, _, ok := sizeOfKeySuffix(key[strings.LastIndexByte(key, '/')+1:])
	if !ok {
		size = SizeDisplay
	}
	return &Object{Body: body, Version: Version(v), tag: tag, etag: []string{etag(tag, size)},
		length: []string{strconv.Itoa(len(body))}, contentType: []string{ContentType(size)}}, nil
}

// Stream copies the object key, which must lie under ownerID's prefix
// (ErrOutsidePrefix), as it arrives from S3, never holding it whole in
// memory (the account export). The destination is the writer open returns;
// open is called only once S3 has answered with the object, so a missing
// object (ErrNotFound) leaves nothing at the destination. It returns the
// bytes copied; an error from open is returned as it is.
func (s *Store) Stream(ctx context.Context, ownerID, key string, open func() (io.Writer, error)) (int64, error) {
	if !underPrefix(ownerID, key) {
		return 0, ErrOutsidePrefix
	}
	out, err := s.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	if isNoSuchKey(err) {
		return 0, ErrNotFound
	}
	if err != nil {
		return 0, fmt.Errorf("photo: stream %s: %w", key, err)
	}
	defer out.Body.Close()
	w, err := open()
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(w, out.Body)
	if err != nil {
		return n, fmt.Errorf("photo: stream %s: %w", key, err)
	}
	return n, nil
}

// Head returns the version the object key (under ownerID's prefix) carries
// in its metadata and when it was last written (S3's Last-Modified, to the
// second), without reading it (HeadObject), or ErrNotFound. The orphan
// check compares the version with the meal's photo_v, and its clean-up
// the time with its grace period.
func (s *Store) Head(ctx context.Context, ownerID, key string) (Version, time.Time, error) {
	if !underPrefix(ownerID, key) {
		return 0, time.Time{}, ErrOutsidePrefix
	}
	out, err := s.s3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	var nf *types.NotFound
	if errors.As(err, &nf) || isNoSuchKey(err) {
		return 0, time.Time{}, ErrNotFound
	}
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("photo: head %s: %w", key, err)
	}
	v, _ := strconv.ParseInt(metadata(out.Metadata, metaVersion), 10, 64)
	return Version(v), aws.ToTime(out.LastModified), nil
}

// ObjectInfo is one object of a listing.
type ObjectInfo struct {
	Key      string
	Size     int64 // bytes
	Modified time.Time
}

// List calls fn with every object under prefix ("users/" for every
// owner's photos), a ListObjectsV2 page at a time, each page paid for
// through pace (one unit a page). It is for the admin monitor and the
// orphan check, which look across owners.
func (s *Store) List(ctx context.Context, prefix string, pace func(context.Context, int) error, fn func(ObjectInfo) error) error {
	p := s3.NewListObjectsV2Paginator(s.s3, &s3.ListObjectsV2Input{Bucket: aws.String(s.bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("photo: list %s: %w", prefix, err)
		}
		for _, o := range page.Contents {
			if err := fn(ObjectInfo{Key: aws.ToString(o.Key), Size: aws.ToInt64(o.Size), Modified: aws.ToTime(o.LastModified)}); err != nil {
				return err
			}
		}
		if err := pace(ctx, 1); err != nil {
			return err
		}
	}
	return nil
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

// Copy copies the object from to the key to, server-side (CopyObject: the
// bytes never pass through this process), with its content type and
// version metadata. Both keys must lie under ownerID's prefix
// (ErrOutsidePrefix); a missing source is ErrNotFound.
func (s *Store) Copy(ctx context.Context, ownerID, from, to string) error {
	if !underPrefix(ownerID, from) || !underPrefix(ownerID, to) {
		return ErrOutsidePrefix
	}
	_, err := s.s3.CopyObject(ctx, &s3.CopyObjectInput{
		Bucket:     aws.String(s.bucket),
		Key:        aws.String(to),
		CopySource: aws.String(copySource(s.bucket, from)),
	})
	if isNoSuchKey(err) {
		return ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("photo: copy %s to %s: %w", from, to, err)
	}
	return nil
}

// copySource is CopyObject's x-amz-copy-source: "bucket/key" with each
// path segment of the key escaped and its slashes kept.
func copySource(bucket, key string) string {
	segs := strings.Split(key, "/")
	for i, seg := range segs {
		segs[i] = url.PathEscape(seg)
	}
	return bucket + "/" + strings.Join(segs, "/")
}

// isNoSuchKey reports whether err is S3's "no such key", which CopyObject
// reports as a plain API error rather than *types.NoSuchKey.
func isNoSuchKey(err error) bool {
	var nsk *types.NoSuchKey
	var api smithy.APIError
	return errors.As(err, &nsk) || (errors.As(err, &api) && api.ErrorCode() == "NoSuchKey")
}

// maxDeleteKeys is how many keys one DeleteObjects request may name.
const maxDeleteKeys = 1000

// Delete removes the objects keys, each of which must lie under ownerID's
// prefix (ErrOutsidePrefix, before any request), with DeleteObjects in
// batches of up to 1000 keys. Missing objects are not an error, so a
// deletion can be re-run. A key S3 refuses (reported per key inside a 200)
// is an error naming the key and S3's code.
func (s *Store) Delete(ctx context.Context, ownerID string, keys ...string) error {
	for _, k := range keys {
		if !underPrefix(ownerID, k) {
			return ErrOutsidePrefix
		}
	}
	for start := 0; start < len(keys); start += maxDeleteKeys {
		batch := keys[start:min(start+maxDeleteKeys, len(keys))]
		ids := make([]types.ObjectIdentifier, len(batch))
		for i, k := range batch {
			ids[i] = types.ObjectIdentifier{Key: aws.String(k)}
		}
		out, err := s.s3.DeleteObjects(ctx, &s3.DeleteObjectsInput{
			Bucket: aws.String(s.bucket),
			Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)},
		})
		if err != nil {
			return fmt.Errorf("photo: delete %d objects: %w", len(batch), err)
		}
		for _, e := range out.Errors {
			if aws.ToString(e.Code) == "NoSuchKey" {
				continue
			}
			return fmt.Errorf("photo: delete %s: %s: %s", aws.ToString(e.Key), aws.ToString(e.Code), aws.ToString(e.Message))
		}
	}
	return nil
}

// DeleteAll deletes every object of ownerID, under UserPrefix and
// PendingPrefix (a step of account deletion): ListObjectsV2 pages, each
// deleted with DeleteObjects. It returns how many objects it deleted; it
// can be re-run after a failure part-way.
func (s *Store) DeleteAll(ctx context.Context, ownerID string) (int, error) {
	if ownerID == "" {
		return 0, fmt.Errorf("photo: delete all: empty owner id")
	}
	deleted := 0
	for _, prefix := range []string{UserPrefix(ownerID), PendingPrefix(ownerID)} {
		p := s3.NewListObjectsV2Paginator(s.s3, &s3.ListObjectsV2Input{Bucket: aws.String(s.bucket), Prefix: aws.String(prefix)})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				return deleted, fmt.Errorf("photo: delete all: list %s: %w", prefix, err)
			}
			keys := make([]string, len(page.Contents))
			for i, o := range page.Contents {
				keys[i] = aws.ToString(o.Key)
			}
			if err := s.Delete(ctx, ownerID, keys...); err != nil {
				return deleted, fmt.Errorf("photo: delete all: %w", err)
			}
			deleted += len(keys)
		}
	}
	return deleted, nil
}

// underPrefix reports whether key lies under one of ownerID's prefixes
// (UserPrefix, PendingPrefix), with no path tricks in either: no "..", no
// empty segment (keyID leaves neither in an ID).
func underPrefix(ownerID, key string) bool {
	if ownerID == "" || strings.Contains(key, "..") || strings.Contains(key, "//") {
		return false
	}
	for _, prefix := range []string{UserPrefix(ownerID), PendingPrefix(ownerID)} {
		if strings.HasPrefix(key, prefix) && len(key) > len(prefix) {
			return true
		}
	}
	return false
}

// CopyOwner copies every object under fromID's UserPrefix to the same
// key under toID's (the move of an account to a new subject: meal photos
// and all their sized copies), server-side with CopyObject, up to
// copyWorkers at a time. Objects under PendingPrefix (uploads not yet
// saved) are not copied. Copying over a copy already made writes the
// same bytes, so it can be re-run after a failure part-way. It returns
// how many objects it copied.
func (s *Store) CopyOwner(ctx context.Context, fromID, toID string) (int, error) {
	if fromID == "" || toID == "" || fromID == toID {
		return 0, fmt.Errorf("photo: copy owner: ids %q and %q must be two non-empty ids", fromID, toID)
	}
	from, to := UserPrefix(fromID), UserPrefix(toID)
	var copied atomic.Int64
	p := s3.NewListObjectsV2Paginator(s.s3, &s3.ListObjectsV2Input{Bucket: aws.String(s.bucket), Prefix: aws.String(from)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return int(copied.Load()), fmt.Errorf("photo: copy owner: list %s: %w", from, err)
		}
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(copyWorkers)
		for _, o := range page.Contents {
			src := aws.ToString(o.Key)
			dst := to + strings.TrimPrefix(src, from)
			g.Go(func() error {
				_, err := s.s3.CopyObject(gctx, &s3.CopyObjectInput{
					Bucket:     aws.String(s.bucket),
					Key:        aws.String(dst),
					CopySource: aws.String(copySource(s.bucket, src)),
				})
				if isNoSuchKey(err) {
					return nil // deleted since the listing
				}
				if err != nil {
					return fmt.Errorf("photo: copy owner: %s: %w", src, err)
				}
				copied.Add(1)
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			return int(copied.Load()), err
		}
	}
	return int(copied.Load()), nil
}

// copyWorkers is how many CopyObject requests CopyOwner has in flight.
const copyWorkers = 8
