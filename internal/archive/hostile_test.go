package archive

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"strings"
	"testing"
)

// entry is one file of a zip built by zipOf. By default it is stored as
// body; deflate deflates it. declare, if not 0, is the uncompressed size
// the zip declares for it whatever body holds (a lie), and compressed the
// compressed size likewise; flags and method, if set, go into its header
// as they are.
type entry struct {
	name       string
	body       []byte
	deflate    bool
	declare    int64
	compressed int64
	flags      uint16
	method     uint16
}

// zipOf builds a zip of entries in order, writing each one raw so that
// its header says exactly what the entry asks for.
func zipOf(t testing.TB, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		data, method := e.body, zip.Store
		if e.deflate {
			var d bytes.Buffer
			fw, _ := flate.NewWriter(&d, flate.BestCompression)
			fw.Write(e.body)
			fw.Close()
			data, method = d.Bytes(), zip.Deflate
		}
		if e.method != 0 {
			method = e.method
		}
		h := &zip.FileHeader{Name: e.name, Method: method, Flags: e.flags, CRC32: crc32.ChecksumIEEE(e.body),
			CompressedSize64: uint64(len(data)), UncompressedSize64: uint64(len(e.body))}
		if e.declare != 0 {
			h.UncompressedSize64 = uint64(e.declare)
		}
		if e.compressed != 0 {
			h.CompressedSize64 = uint64(e.compressed)
		}
		w, err := zw.CreateRaw(h)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(data)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// meal1 is a minimal valid meal; mealsOf wraps meal objects in a format 1
// meals.json.
const meal1 = `{"date":"2026-09-01","time":"12:30:00","kind":"lunch"}`

func mealsOf(meals ...string) []byte {
	return []byte(`{"email":"a@example.com","meals":[` + strings.Join(meals, ",") + `]}`)
}

// mealsJSON is a meals.json entry of meals (format 1).
func mealsJSON(meals ...string) entry {
	return entry{name: MealsFile, body: mealsOf(meals...), deflate: true}
}

// rewrite copies the zip zb entry by entry through edit, which returns
// the entry's new body, or nil to drop it; add entries go at the end.
func rewrite(t testing.TB, zb []byte, edit func(name string, body []byte) []byte, add ...entry) []byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(zb), int64(len(zb)))
	if err != nil {
		t.Fatal(err)
	}
	var out []entry
	for _, f := range zr.File {
		rc, _ := f.Open()
		b, _ := io.ReadAll(rc)
		rc.Close()
		if b = edit(f.Name, b); b != nil {
			out = append(out, entry{name: f.Name, body: b, deflate: f.Method == zip.Deflate})
		}
	}
	return zipOf(t, append(out, add...)...)
}

// toZip64 rewrites the end of zb (a zip without a comment) the way a
// zip64 writer ends a zip: a zip64 end record declaring entries, its
// locator, and an end record whose fields say "see zip64".
func toZip64(t testing.TB, zb []byte, entries uint64) []byte {
	t.Helper()
	e := endAt(zb)
	size, offset := binary.LittleEndian.Uint32(zb[e+12:]), binary.LittleEndian.Uint32(zb[e+16:])
	out := append([]byte{}, zb[:e]...)
	rec := make([]byte, 56)
	binary.LittleEndian.PutUint32(rec, 0x06064b50)
	binary.LittleEndian.PutUint64(rec[4:], 44)
	binary.LittleEndian.PutUint16(rec[12:], 45)
	binary.LittleEndian.PutUint16(rec[14:], 45)
	binary.LittleEndian.PutUint64(rec[24:], entries)
	binary.LittleEndian.PutUint64(rec[32:], entries)
	binary.LittleEndian.PutUint64(rec[40:], uint64(size))
	binary.LittleEndian.PutUint64(rec[48:], uint64(offset))
	loc := make([]byte, 20)
	binary.LittleEndian.PutUint32(loc, 0x07064b50)
	binary.LittleEndian.PutUint64(loc[8:], uint64(e))
	binary.LittleEndian.PutUint32(loc[16:], 1)
	end := make([]byte, 22)
	binary.LittleEndian.PutUint32(end, 0x06054b50)
	binary.LittleEndian.PutUint16(end[8:], 0xffff)
	binary.LittleEndian.PutUint16(end[10:], 0xffff)
	binary.LittleEndian.PutUint32(end[12:], 0xffffffff)
	binary.LittleEndian.PutUint32(end[16:], 0xffffffff)
	out = append(append(append(out, rec...), loc...), end...)
	return out
}

// endAt returns the offset of zb's end of central directory record.
func endAt(zb []byte) int { return bytes.LastIndex(zb, []byte{0x50, 0x4b, 0x05, 0x06}) }

// TestOpenRefusesHostileZips: each kind of hostile or broken zip is
// refused by Open with a *Refusal whose reason says what is wrong.
func TestOpenRefusesHostileZips(t *testing.T) {
	t.Parallel()
	photo := func(name string) entry { return entry{name: name, body: []byte("\xff\xd8jpeg\xff\xd9")} }
	valid := zipOf(t, mealsJSON(meal1))
	sample, _, _ := writeSample(t)
	zeros := make([]byte, 8<<20)
	tests := []struct {
		name string
		zip  []byte
		lim  Limits
		want string
	}{
		{"dot-dot name", zipOf(t, mealsJSON(meal1), photo("../evil.jpg")), Limits{}, `entry name "../evil.jpg" climbs out of the archive with ".."`},
		{"dot-dot inside a name", zipOf(t, mealsJSON(meal1), photo("photos/../../etc/x")), Limits{}, `climbs out of the archive`},
		{"absolute name", zipOf(t, mealsJSON(meal1), photo("/etc/cron.d/x")), Limits{}, `entry name "/etc/cron.d/x" is absolute`},
		{"drive letter", zipOf(t, mealsJSON(meal1), photo("C:/Windows/x.jpg")), Limits{}, `starts with a drive letter`},
		{"backslash", zipOf(t, mealsJSON(meal1), photo(`photos\..\x.jpg`)), Limits{}, `holds a backslash`},
		{"NUL in a name", zipOf(t, mealsJSON(meal1), photo("photos/a\x00.jpg")), Limits{}, `holds a NUL character`},
		{"control character in a name", zipOf(t, mealsJSON(meal1), photo("photos/a\x1b[2J.jpg")), Limits{}, `holds a control character`},
		{"not UTF-8 name", zipOf(t, mealsJSON(meal1), photo("photos/\xff.jpg")), Limits{}, `is not valid UTF-8`},
		{"duplicate name", zipOf(t, mealsJSON(meal1), mealsJSON(meal1, meal1)), Limits{}, `the zip holds "meals.json" twice`},
		{"case-folded duplicate", zipOf(t, mealsJSON(meal1), photo("photos/A.jpg"), photo("photos/a.jpg")), Limits{}, `both "photos/A.jpg" and "photos/a.jpg", which are one name on a case-insensitive file system`},
		{"normalisation duplicate", zipOf(t, mealsJSON(meal1), photo("photos/caf\u00e9.jpg"), photo("photos/cafe\u0301.jpg")), Limits{}, `which are one name`},
		{"zip bomb by ratio", zipOf(t, mealsJSON(meal1), entry{name: "photos/bomb.jpg", body: zeros, deflate: true}), Limits{}, `"photos/bomb.jpg" expands from`},
		{"declared size lies (more bytes)", zipOf(t, entry{name: MealsFile, body: mealsOf(meal1, meal1, meal1), deflate: true, declare: 40}), Limits{}, `"meals.json" holds more bytes than the zip declares for it`},
		{"declared size lies (fewer bytes)", zipOf(t, entry{name: MealsFile, body: mealsOf(meal1), deflate: true, declare: 5000}), Limits{}, `"meals.json" ends 4`},
		{"entries overlap", zipOf(t, mealsJSON(meal1), entry{name: "photos/a.jpg", body: []byte("x"), compressed: 1 << 20, declare: 1 << 20}), Limits{}, `"photos/a.jpg" overlaps the central directory`},
		{"too many entries", zipOf(t, mealsJSON(meal1), photo("1"), photo("2"), photo("3"), photo("4"), photo("5")), Limits{MaxEntries: 5}, `the zip has 6 entries; at most 5 are taken`},
		{"end record undercounts", func() []byte {
			zb := zipOf(t, mealsJSON(meal1), photo("1"), photo("2"))
			e := endAt(zb)
			binary.LittleEndian.PutUint16(zb[e+8:], 2)
			binary.LittleEndian.PutUint16(zb[e+10:], 2)
			return zb
		}(), Limits{}, `the file is damaged`},
		// archive/zip compares the count modulo 65536 only.
		{"zip64 end record miscounts by 65536", toZip64(t, zipOf(t, mealsJSON(meal1), photo("1"), photo("2")), 3+65536), Limits{}, `central directory holds fewer entries than its end record counts (65539)`},
		{"zip64 end record overcounts", toZip64(t, zipOf(t, mealsJSON(meal1), photo("1")), 1<<40), Limits{}, `the zip has 1099511627776 entries; at most 100000 are taken`},
		{"central directory cut short", func() []byte {
			zb := zipOf(t, mealsJSON(meal1), photo("photos/1.jpg"), photo("photos/2.jpg"))
			e := endAt(zb)
			return append(zb[:e-30:e-30], zb[e:]...)
		}(), Limits{}, `central directory does not end where its end record begins`},
		{"central directory too large", zipOf(t, mealsJSON(meal1), photo("photos/a-long-name-of-a-photo.jpg")), Limits{MaxDirectoryBytes: 64}, `central directory is 1`},
		{"meals.json too large", zipOf(t, mealsJSON(meal1, meal1, meal1)), Limits{MaxJSONBytes: 100}, `"meals.json" is 200 bytes uncompressed; at most 100 are taken`},
		{"too many meals", zipOf(t, mealsJSON(meal1, meal1, meal1)), Limits{MaxMeals: 2}, `meals.json holds more than 2 meals`},
		{"file too large", zipOf(t, mealsJSON(meal1), entry{name: "meals.csv", body: make([]byte, 300), deflate: true}), Limits{MaxFileBytes: 200}, `"meals.csv" is 300 bytes uncompressed; at most 200`},
		{"photo too large", zipOf(t, mealsJSON(`{"date":"2026-09-01","time":"12:30:00","kind":"lunch","photo":{"file":"photos/a.jpg","width":1,"height":1}}`), entry{name: "photos/a.jpg", body: make([]byte, 300)}), Limits{MaxPhotoBytes: 200}, `the photo "photos/a.jpg" is 300 bytes; at most 200`},
		{"total too large", zipOf(t, mealsJSON(meal1), entry{name: "a", body: make([]byte, 300)}, entry{name: "b", body: make([]byte, 300)}), Limits{MaxTotalBytes: 500}, `add up to more than 500 bytes uncompressed`},
		{"number as a string", zipOf(t, mealsJSON(meal1, `{"date":"2026-09-01","time":"13:00:00","kind":"lunch","kcal":"512.5"}`)), Limits{}, `meals.json: meal 2: kcal is a string; it must be a number`},
		{"whole number as a string", zipOf(t, mealsJSON(`{"date":"2026-09-01","time":"13:00:00","kind":"lunch","hunger":"4"}`)), Limits{}, `meals.json: meal 1: hunger is a string; it must be a number`},
		{"string as a number", zipOf(t, mealsJSON(`{"date":"2026-09-01","time":"13:00:00","kind":"lunch","notes":5}`)), Limits{}, `meal 1: notes is a number; it must be a string`},
		{"photo of the wrong type", zipOf(t, mealsJSON(`{"date":"2026-09-01","time":"13:00:00","kind":"lunch","photo":"a.jpg"}`)), Limits{}, `meal 1: photo is a string; it must be an object`},
		{"photo size as a string", zipOf(t, mealsJSON(`{"date":"2026-09-01","time":"13:00:00","kind":"lunch","photo":{"file":"a","width":"1"}}`)), Limits{}, `meal 1: photo: width is a string; it must be a number`},
		{"comment of the wrong type", zipOf(t, mealsJSON(`{"date":"2026-09-01","time":"13:00:00","kind":"lunch","comments":[{"text":["x"]}]}`)), Limits{}, `meal 1: comment 1: text is a list; it must be a string`},
		{"number with an exponent", zipOf(t, mealsJSON(`{"date":"2026-09-01","time":"13:00:00","kind":"lunch","kcal":1e400}`)), Limits{}, `kcal is 1e400; it must be a plain decimal number`},
		{"hunger out of range", zipOf(t, mealsJSON(`{"date":"2026-09-01","time":"13:00:00","kind":"lunch","hunger":9}`)), Limits{}, `hunger is 9; it must be 1 to 5`},
		{"bad date", zipOf(t, mealsJSON(`{"date":"2026-13-01","time":"13:00:00","kind":"lunch"}`)), Limits{}, `meal 1: date "2026-13-01" is not a date like 2026-09-01`},
		{"missing time", zipOf(t, mealsJSON(`{"date":"2026-09-01","kind":"lunch"}`)), Limits{}, `meal 1: time is missing`},
		{"missing kind", zipOf(t, mealsJSON(`{"date":"2026-09-01","time":"13:00:00"}`)), Limits{}, `meal 1: kind is missing`},
		{"meal not an object", zipOf(t, mealsJSON(`1`)), Limits{}, `meal 1 is a number; it must be an object`},
		{"meals not a list", zipOf(t, entry{name: MealsFile, body: []byte(`{"meals":{"a":1}}`)}), Limits{}, `meals is an object; it must be a list`},
		{"no meals list", zipOf(t, entry{name: MealsFile, body: []byte(`{"email":"a@example.com"}`)}), Limits{}, `meals.json has no "meals" list`},
		{"meals.json not JSON", zipOf(t, entry{name: MealsFile, body: []byte("meal,kcal\nsoup,12\n")}), Limits{}, `meals.json is not valid JSON`},
		{"meals.json cut short", zipOf(t, entry{name: MealsFile, body: mealsOf(meal1)[:30]}), Limits{}, `meals.json ends in the middle of its JSON`},
		{"meals.json with a second value", zipOf(t, entry{name: MealsFile, body: append(mealsOf(meal1), " {}"...)}), Limits{}, `meals.json holds more than one JSON value`},
		{"meals.json damaged", zipOf(t, entry{name: MealsFile, body: []byte{0xff, 0xff, 0xff, 0xff}, method: zip.Deflate}), Limits{}, `"meals.json" is damaged: its compressed data does not decode`},
		{"missing meals.json", zipOf(t, photo("photos/a.jpg")), Limits{}, `meals.json is missing`},
		{"named photo missing", zipOf(t, mealsJSON(`{"date":"2026-09-01","time":"12:30:00","kind":"lunch","photo":{"file":"photos/2026-09-01/x.jpg","width":4,"height":3}}`)), Limits{}, `meal 1 names the photo "photos/2026-09-01/x.jpg", which is not in the zip`},
		{"photo with no file", zipOf(t, mealsJSON(`{"date":"2026-09-01","time":"12:30:00","kind":"lunch","photo":{"width":4,"height":3}}`)), Limits{}, `photo: file is missing`},
		{"not a zip", []byte("%PDF-1.7 this is a document, not an archive, and it is long enough"), Limits{}, `not a zip archive, or its end was cut off`},
		{"empty file", nil, Limits{}, `not a zip archive (it is too short to be one)`},
		{"truncated", valid[:len(valid)-10], Limits{}, `not a zip archive, or its end was cut off`},
		{"encrypted entry", zipOf(t, mealsJSON(meal1), entry{name: "photos/a.jpg", body: []byte("x"), flags: 1}), Limits{}, `"photos/a.jpg" is encrypted`},
		{"unknown compression", zipOf(t, mealsJSON(meal1), entry{name: "photos/a.jpg", body: []byte("x"), method: 12}), Limits{}, `uses compression method 12`},
		{"format newer than the reader", zipOf(t, entry{name: MealsFile, body: []byte(`{"format":3,"meals":[]}`)}), Limits{}, `meals.json is format 3, made by a newer ndiro; this one reads formats 1 to 2`},
		{"format as a string", zipOf(t, entry{name: MealsFile, body: []byte(`{"format":"2","meals":[]}`)}), Limits{}, `meals.json: format is a string; it must be a number`},
		{"format zero", zipOf(t, entry{name: MealsFile, body: []byte(`{"format":0,"meals":[]}`)}), Limits{}, `format 0 is not a format of ndiro's`},
		{"format 2 without its manifest", rewrite(t, sample, func(n string, b []byte) []byte {
			if n == ManifestFile {
				return nil
			}
			return b
		}), Limits{}, `manifest.json is missing, though meals.json is format 2`},
		{"meals.json changed after the manifest", rewrite(t, sample, func(n string, b []byte) []byte {
			if n == MealsFile {
				return bytes.Replace(b, []byte("512.5"), []byte("612.5"), 1)
			}
			return b
		}), Limits{}, `"meals.json" is damaged: its SHA-256 differs from manifest.json's`},
		{"meals.csv changed after the manifest", rewrite(t, sample, func(n string, b []byte) []byte {
			if n == MealsCSV {
				return bytes.Replace(b, []byte("512.5"), []byte("612.5"), 1)
			}
			return b
		}), Limits{}, `"meals.csv" is damaged: its SHA-256 differs`},
		{"file the manifest lists missing", rewrite(t, sample, func(n string, b []byte) []byte {
			if n == CommentsCSV {
				return nil
			}
			return b
		}), Limits{}, `"comments.csv", which manifest.json lists, is missing from the zip`},
		{"size differs from the manifest", rewrite(t, sample, func(n string, b []byte) []byte {
			if n == MealsCSV {
				return append(b, "x"...)
			}
			return b
		}), Limits{}, `"meals.csv" is 543 bytes in the zip but 542 in manifest.json`},
		{"manifest counts other meals", rewrite(t, sample, func(n string, b []byte) []byte {
			if n == ManifestFile {
				return bytes.Replace(b, []byte(`"meals": 3`), []byte(`"meals": 4`), 1)
			}
			return b
		}), Limits{}, `manifest.json counts 4 meals but meals.json holds 3`},
		{"manifest of the wrong type", rewrite(t, sample, func(n string, b []byte) []byte {
			if n == ManifestFile {
				return bytes.Replace(b, []byte(`"meals": 3`), []byte(`"meals": "3"`), 1)
			}
			return b
		}), Limits{}, `manifest.json: meals is a JSON string`},
	}
	if len(tests) < 10 {
		t.Fatal("fewer than 10 kinds of hostile zip")
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := Open(bytes.NewReader(tc.zip), int64(len(tc.zip)), tc.lim)
			if a != nil {
				t.Errorf("Open returned an archive with the refusal")
			}
			reason := refusal(err)
			if reason == "" {
				t.Fatalf("Open = %v, want a *Refusal", err)
			}
			if !strings.Contains(reason, tc.want) {
				t.Errorf("Open refused with %q, want it to say %q", reason, tc.want)
			}
		})
	}
	// The base of most cases opens: each one fails for its own reason.
	if _, err := Open(bytes.NewReader(valid), int64(len(valid)), Limits{}); err != nil {
		t.Fatalf("Open(valid) = %v", err)
	}
}

// TestOpenPhotoRefusesLies: a photo entry holding more bytes than the zip
// declares, fewer, or bytes other than the manifest's, fails its read with
// a refusal; Open took the zip (photos are checked as they are read), and
// Verify finds the same.
func TestOpenPhotoRefusesLies(t *testing.T) {
	t.Parallel()
	named := mealsJSON(`{"date":"2026-09-01","time":"12:30:00","kind":"lunch","photo":{"file":"photos/a.jpg","width":4,"height":3}}`)
	body := bytes.Repeat([]byte("jpeg"), 100)
	sample, _, photos := writeSample(t)
	tests := []struct {
		name string
		zip  []byte
		want string
		max  int // bytes the read may pass on before it fails
	}{
		{"more bytes than declared", zipOf(t, named, entry{name: "photos/a.jpg", body: body, deflate: true, declare: 50}), `"photos/a.jpg" holds more bytes than the zip declares for it`, 50},
		{"stored, more bytes than declared", zipOf(t, named, entry{name: "photos/a.jpg", body: body, declare: 50}), `"photos/a.jpg" holds more bytes than the zip declares for it`, 50},
		{"fewer bytes than declared", zipOf(t, named, entry{name: "photos/a.jpg", body: body, deflate: true, declare: 500}), `"photos/a.jpg" ends 100 bytes short`, 400},
		{"CRC differs", func() []byte {
			zb := zipOf(t, named, entry{name: "photos/a.jpg", body: body})
			i := bytes.Index(zb, body)
			zb[i] ^= 1
			return zb
		}(), `"photos/a.jpg" is damaged: its CRC-32 differs`, 400},
		{"SHA-256 differs from the manifest", rewrite(t, sample, func(n string, b []byte) []byte {
			if strings.HasPrefix(n, "photos/") {
				return bytes.ToUpper(b)
			}
			return b
		}), `is damaged: its SHA-256 differs from manifest.json's`, len(photos["123000-abcdef"])},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := Open(bytes.NewReader(tc.zip), int64(len(tc.zip)), Limits{})
			if err != nil {
				t.Fatalf("Open = %v; photos are checked as they are read", err)
			}
			rc, err := a.OpenPhoto(a.Meals()[0].Photo)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(rc)
			rc.Close()
			if r := refusal(err); !strings.Contains(r, tc.want) {
				t.Errorf("reading the photo = %d bytes, %v; want a refusal saying %q", len(got), err, tc.want)
			}
			if len(got) > tc.max {
				t.Errorf("read %d bytes of the photo, want at most %d", len(got), tc.max)
			}
			if r := refusal(a.Verify()); !strings.Contains(r, tc.want) {
				t.Errorf("Verify = %q, want %q", r, tc.want)
			}
		})
	}
}

// TestOpenIgnoresUnknownFields: fields and files a newer writer may add
// are skipped, whatever their type, and the known ones still read.
func TestOpenIgnoresUnknownFields(t *testing.T) {
	t.Parallel()
	js := `{"format":2,"future":{"nested":[1,"two",{"three":3}]},"email":"a@example.com","meals":[
		{"date":"2026-09-01","time":"12:30:00","kind":"brunch","mood":"great","tags":["a","b"],"kcal":512.5,"rating":{"stars":5},
		 "photo":{"file":"photos/a.jpg","width":4,"height":3,"blurhash":"LKO2?U%2Tw=w","exif":{"iso":100}},
		 "comments":[{"id":"1","text":"hi","from":"Ana","at":"2026-09-02T10:00:00Z","reactions":[1,2]}]}
	],"trailer":null}`
	man := fmt.Sprintf(`{"format":2,"app":"ndiro","app_version":"v9","signature":"x","meals":1,"photos":1,"files":[
		{"name":"photos/a.jpg","size":4,"sha256":"%s","mode":"0644"},
		{"name":"meals.json","size":%d,"sha256":"%s"}]}`, sha("jpeg"), len(js), sha(js))
	zb := zipOf(t,
		entry{name: "photos/", body: nil},
		entry{name: "photos/a.jpg", body: []byte("jpeg")},
		entry{name: MealsFile, body: []byte(js), deflate: true},
		entry{name: "stickers/readme.txt", body: []byte("a file no reader knows")},
		entry{name: ManifestFile, body: []byte(man)},
	)
	a, err := Open(bytes.NewReader(zb), int64(len(zb)), Limits{})
	if err != nil {
		t.Fatalf("Open = %v, want unknown fields and files ignored", err)
	}
	m := a.Meals()[0]
	if m.Kind != "brunch" || m.Kcal == nil || m.Kcal.String() != "512.5" || m.Photo.File != "photos/a.jpg" || m.Photo.Width != 4 || len(m.Comments) != 1 || m.Comments[0].Text != "hi" {
		t.Errorf("meal read = %+v", m)
	}
	if a.Header().Email != "a@example.com" || a.Manifest().AppVersion != "v9" {
		t.Errorf("header %+v, manifest %+v", a.Header(), a.Manifest())
	}
	if err := a.Verify(); err != nil {
		t.Errorf("Verify = %v", err)
	}
}

// failFrom is a zip's bytes whose reads fail with errGone from byte from
// to byte to (exclusive).
type failFrom struct {
	b        []byte
	from, to int64
}

var errGone = errors.New("part gone")

func (f failFrom) ReadAt(p []byte, off int64) (int, error) {
	if off < f.to && off+int64(len(p)) > f.from {
		return 0, errGone
	}
	return bytes.NewReader(f.b).ReadAt(p, off)
}

// TestOpenPassesReadErrorsOn: a read of the zip that fails (a staged part
// gone) is Open's error as the reader gave it, wherever it fails (the
// end record, an entry's local header, an entry's data, a central
// directory too large for the first read of the end), never a Refusal
// that would blame the zip.
func TestOpenPassesReadErrorsOn(t *testing.T) {
	t.Parallel()
	small := zipOf(t, mealsJSON(meal1))
	var many []entry
	for i := range 3000 {
		many = append(many, entry{name: fmt.Sprintf("extra/%04d-%s.txt", i, strings.Repeat("n", 20)), body: []byte("x")})
	}
	big := zipOf(t, append([]entry{mealsJSON(meal1)}, many...)...)
	dirAt := int64(bytes.Index(big, []byte{0x50, 0x4b, 0x01, 0x02}))
	for _, c := range []struct {
		name     string
		zb       []byte
		from, to int64
	}{
		{"the end record", small, int64(len(small)) - 10, int64(len(small))},
		{"meals.json's local header", small, 0, 10},
		{"meals.json's data", small, 40, 50},
		{"the start of a large central directory", big, dirAt, dirAt + 10},
	} {
		_, err := Open(failFrom{c.zb, c.from, c.to}, int64(len(c.zb)), Limits{})
		var refused *Refusal
		if !errors.Is(err, errGone) || errors.As(err, &refused) {
			t.Errorf("%s unreadable: Open = %v; want the reader's error, no refusal", c.name, err)
		}
	}
	if len(big)-int(dirAt) < 70<<10 {
		t.Fatalf("the large zip's directory is %d bytes; want more than the 64 KiB end read", len(big)-int(dirAt))
	}
}
