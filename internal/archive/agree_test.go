package archive

import (
	"bytes"
	"hash/crc32"
	"io"
	"strings"
	"sync/atomic"
	"testing"

	"ndiro/internal/archive/archivetest"
)

// countingAt counts the bytes read from b at or after offset from.
type countingAt struct {
	b    []byte
	from int64
	read atomic.Int64
}

func (c *countingAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := bytes.NewReader(c.b).ReadAt(p, off)
	if end := off + int64(n); end > c.from {
		c.read.Add(end - max(off, c.from))
	}
	return n, err
}

// TestOpenRefusesTwoEndRecords: a zip whose last end record's comment
// holds a second one (archive/zip takes the second, which points at a
// directory of 5,000 entries hidden in an entry's data; the first
// declares 2) is refused from its last bytes alone, before any reader
// parses the hidden directory.
func TestOpenRefusesTwoEndRecords(t *testing.T) {
	t.Parallel()
	zb := archivetest.TwoEnds(5000)
	hidden := int64(bytes.Index(zb, []byte("PK\x01\x02"))) // the hidden directory's first header
	ra := &countingAt{b: zb, from: hidden}
	_, err := Open(ra, int64(len(zb)), Limits{})
	if r := refusal(err); !strings.Contains(r, "does not end with its end of central directory record") {
		t.Errorf("Open = %v; want a refusal saying the zip does not end with its end record", err)
	}
	// The tail read reaches back 64 KiB; the hidden directory is 300 KB.
	if got, tail := ra.read.Load(), int64(endLen+maxCommentLen); got > tail {
		t.Errorf("Open read %d bytes from the hidden directory on; want at most the %d of the end's search", got, tail)
	}
}

// plantedZip64 is a zip that a reader of zip32 end records and
// archive/zip read as two different archives: its end record declares a
// directory of exactly 0xffff bytes, which APPNOTE reads as a size, and
// archive/zip as "see the zip64 end record"; the directory's last 20
// bytes (the end of an entry's comment) are a zip64 locator pointing at a
// zip64 end record, inside hidden.bin's data, of another directory of 2
// entries, whose meals.json holds 2 meals. The directory ending at the
// end record holds meals.json of 1 meal (archivetest.Meals).
func plantedZip64(t *testing.T) []byte {
	t.Helper()
	two := `{"email":"b@example.com","meals":[` + `{"date":"2026-09-01","time":"12:30:00","kind":"lunch"},{"date":"2026-09-02","time":"08:00:00","kind":"breakfast"}]}`
	var b bytes.Buffer
	b.Write(archivetest.Local(MealsFile, []byte(archivetest.Meals), nil))
	plantedMeals := int64(b.Len())
	b.Write(archivetest.Local(MealsFile, []byte(two), nil))
	hiddenAt := int64(b.Len())
	// hidden.bin's data: the planted directory, then its zip64 end record.
	plantedDir := hiddenAt + 30 + int64(len("hidden.bin"))
	var dir bytes.Buffer
	dir.Write(archivetest.Central(archivetest.Entry{Name: MealsFile, Offset: plantedMeals, Size: uint32(len(two)), CRC: crc32.ChecksumIEEE([]byte(two))}))
	var data []byte
	for range 2 { // the second pass knows hidden.bin's size
		d := append([]byte{}, dir.Bytes()...)
		d = append(d, archivetest.Central(archivetest.Entry{Name: "hidden.bin", Offset: hiddenAt, Size: uint32(len(data)), CRC: crc32.ChecksumIEEE(data)})...)
		rec := plantedDir + int64(len(d))
		data = append(d, archivetest.End64(2, int64(len(d)), plantedDir, rec)[:56]...)
	}
	b.Write(archivetest.Local("hidden.bin", data, nil))
	dirAt := int64(b.Len())
	first := archivetest.Central(archivetest.Entry{Name: MealsFile, Size: uint32(len(archivetest.Meals)), CRC: crc32.ChecksumIEEE([]byte(archivetest.Meals))})
	loc := archivetest.End64(2, 0, 0, plantedDir+int64(len(data))-56)[56:76]
	comment := make([]byte, 0xffff-len(first)-46-len("hidden.bin"))
	copy(comment[len(comment)-20:], loc)
	b.Write(first)
	b.Write(archivetest.Central(archivetest.Entry{Name: "hidden.bin", Offset: hiddenAt, Size: uint32(len(data)), CRC: crc32.ChecksumIEEE(data), Comment: comment}))
	if got := int64(b.Len()) - dirAt; got != 0xffff {
		t.Fatalf("the directory is %d bytes, want 65535", got)
	}
	b.Write(archivetest.End(2, 0xffff, dirAt, 0))
	return b.Bytes()
}

// TestOpenReadsTheDirectoryItChecked: archive/zip is handed the
// directory Open's own end records found, whatever the file's end could
// also be read as: the zip of plantedZip64 opens with the 1 meal of the
// directory that ends at its end record, never the 2 of the planted one.
func TestOpenReadsTheDirectoryItChecked(t *testing.T) {
	t.Parallel()
	zb := plantedZip64(t)
	a, err := Open(bytes.NewReader(zb), int64(len(zb)), Limits{})
	if err != nil {
		t.Fatalf("Open = %v", err)
	}
	if got := len(a.Meals()); got != 1 || a.Header().Email != "a@example.com" {
		t.Errorf("Open read %d meals of %s; want the 1 meal of a@example.com in the directory it checked", got, a.Header().Email)
	}
}

// overlapZips are zips whose entries overlap in ways Open sees from the
// central directory alone.
func overlapZips(t *testing.T) map[string][]byte {
	t.Helper()
	// b.jpg's local header and data lie inside a.jpg's data.
	inner := archivetest.Local("photos/b.jpg", []byte("bbbb"), nil)
	outer := append(append([]byte("aaaa"), inner...), "aaaa"...)
	var nested bytes.Buffer
	nested.Write(archivetest.Local(MealsFile, []byte(archivetest.Meals), nil))
	aAt := int64(nested.Len())
	nested.Write(archivetest.Local("photos/a.jpg", outer, nil))
	dirAt := int64(nested.Len())
	nested.Write(archivetest.Central(archivetest.Entry{Name: MealsFile, Size: uint32(len(archivetest.Meals)), CRC: crc32.ChecksumIEEE([]byte(archivetest.Meals))}))
	nested.Write(archivetest.Central(archivetest.Entry{Name: "photos/a.jpg", Offset: aAt, Size: uint32(len(outer)), CRC: crc32.ChecksumIEEE(outer)}))
	nested.Write(archivetest.Central(archivetest.Entry{Name: "photos/b.jpg", Offset: aAt + 30 + 12 + 4, Size: 4, CRC: crc32.ChecksumIEEE([]byte("bbbb"))}))
	nested.Write(archivetest.End(3, int64(nested.Len())-dirAt, dirAt, 0))
	return map[string][]byte{
		"every photo at one local header": archivetest.Overlapping(3),
		"a header inside another's data":  nested.Bytes(),
	}
}

// TestOpenRefusesOverlappingEntries: entries whose headers or data lie
// inside another entry's data are refused by Open, though their sizes
// add up to less than the file (the check that was there before).
func TestOpenRefusesOverlappingEntries(t *testing.T) {
	t.Parallel()
	for name, zb := range overlapZips(t) {
		t.Run(name, func(t *testing.T) {
			_, err := Open(bytes.NewReader(zb), int64(len(zb)), Limits{})
			if r := refusal(err); !strings.Contains(r, "overlap") {
				t.Errorf("Open = %v; want a refusal saying the entries overlap", err)
			}
		})
	}
}

// TestOpenPhotoRefusesOverlapByLocalHeader: a.jpg's local header holds an
// extra field its central header lacks, which moves its data on into
// b.jpg's local header. Open sees no overlap (its central sizes fit), but
// the photo is refused when opened, before a byte of it is read, and so
// is Verify, though its CRC-32 matches the bytes it would read.
func TestOpenPhotoRefusesOverlapByLocalHeader(t *testing.T) {
	t.Parallel()
	const size = 100
	meals := `{"email":"a@example.com","meals":[{"date":"2026-09-01","time":"12:30:00","kind":"lunch","photo":{"file":"photos/a.jpg","width":1,"height":1}}]}`
	var b bytes.Buffer
	b.Write(archivetest.Local(MealsFile, []byte(meals), nil))
	aAt := int64(b.Len())
	b.Write(archivetest.Local("photos/a.jpg", make([]byte, size-40), make([]byte, 40)))
	bAt := int64(b.Len())
	b.Write(archivetest.Local("photos/b.jpg", []byte("bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"), nil))
	dirAt := int64(b.Len())
	start := aAt + 30 + 12 + 40
	crc := crc32.ChecksumIEEE(b.Bytes()[start : start+size])
	b.Write(archivetest.Central(archivetest.Entry{Name: MealsFile, Size: uint32(len(meals)), CRC: crc32.ChecksumIEEE([]byte(meals))}))
	b.Write(archivetest.Central(archivetest.Entry{Name: "photos/a.jpg", Offset: aAt, Size: size, CRC: crc}))
	b.Write(archivetest.Central(archivetest.Entry{Name: "photos/b.jpg", Offset: bAt, Size: 50, CRC: crc32.ChecksumIEEE(bytes.Repeat([]byte("b"), 50))}))
	b.Write(archivetest.End(3, int64(b.Len())-dirAt, dirAt, 0))
	zb := b.Bytes()
	if aAt+30+12+size > bAt {
		t.Fatal("a.jpg's central sizes overlap b.jpg already")
	}
	a, err := Open(bytes.NewReader(zb), int64(len(zb)), Limits{})
	if err != nil {
		t.Fatalf("Open = %v; the photo's local header is read with the photo", err)
	}
	const want = `"photos/a.jpg" overlaps`
	rc, err := a.OpenPhoto(a.Meals()[0].Photo)
	if err == nil {
		got, rerr := io.ReadAll(rc)
		rc.Close()
		t.Fatalf("OpenPhoto read %d bytes (%v); want a refusal saying %s", len(got), rerr, want)
	}
	if r := refusal(err); !strings.Contains(r, want) {
		t.Errorf("OpenPhoto = %v; want a refusal saying %s", err, want)
	}
	if r := refusal(a.Verify()); !strings.Contains(r, want) {
		t.Errorf("Verify = %q; want %s", r, want)
	}
}

// TestOpenRefusesLongMealBeforeHoldingIt: a meal longer than
// MaxMealBytes (8 MB of notes), or a field outside the meals that long,
// is refused naming it, after Open has read little more than the limit
// of it.
func TestOpenRefusesLongMealBeforeHoldingIt(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 8<<20)
	for _, tc := range []struct {
		name, meals, want string
	}{
		{"a long meal", `{"email":"a@example.com","meals":[` + meal1 + `,{"date":"2026-09-01","time":"13:00:00","kind":"lunch","notes":"` + long + `"}]}`,
			"meals.json: meal 2 is longer than 327680 bytes of JSON"},
		{"a long field outside the meals", `{"email":"` + long + `","meals":[]}`,
			"meals.json holds a value longer than 327680 bytes outside its meals"},
		{"a long unknown field", `{"future":["` + long + `"],"meals":[]}`,
			"meals.json holds a value longer than 327680 bytes outside its meals"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			zb := zipOf(t, entry{name: MealsFile, body: []byte(tc.meals)})
			ra := &countingAt{b: zb}
			_, err := Open(ra, int64(len(zb)), Limits{})
			if r := refusal(err); !strings.Contains(r, tc.want) {
				t.Errorf("Open = %v; want a refusal saying %q", err, tc.want)
			}
			if got := ra.read.Load(); got > 1<<20 {
				t.Errorf("Open read %d bytes of the %d-byte zip; want at most 1 MiB", got, len(zb))
			}
		})
	}
}
