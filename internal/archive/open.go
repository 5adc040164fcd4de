package archive

import (
	"archive/zip"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// Header is what meals.json says about the export as a whole.
type Header struct {
	// Format is the format version (Format1, Format2); Write writes Current.
	Format int
	// ExportedAt is when the writer made the export (UTC); zero if unknown.
	ExportedAt time.Time
	// Email is the exporting account's email; TimeZone its IANA zone
	// ("Europe/Rome"), "" if it had none.
	Email    string
	TimeZone string
}

// Archive is a zip that passed every check of Open: its meals are in
// memory, its photos are read one at a time with OpenPhoto.
type Archive struct {
	header   Header
	manifest *Manifest
	meals    []Meal
	files    map[string]file
	sums     map[string]FileSum
	lim      Limits
	// ra is the zip as archive/zip reads it (checkedView).
	ra io.ReaderAt
}

// file is an entry of the zip with where it lies: the offset of its
// local header and the offset its data must end by (the next entry's
// header, or the central directory).
type file struct {
	*zip.File
	hdr, room int64
}

// Header returns what meals.json says about the export.
func (a *Archive) Header() Header { return a.header }

// Manifest returns manifest.json, or nil in a format 1 zip.
func (a *Archive) Manifest() *Manifest { return a.manifest }

// Meals returns every meal of meals.json in its order. The slice is the
// archive's own: read it, do not change it.
func (a *Archive) Meals() []Meal { return a.meals }

// Open reads the zip of size bytes at ra and checks it whole before
// anything is imported (docs/EXPORT-FORMAT.md, reading): the end records
// and central directory (entry count and directory size within lim,
// before archive/zip reads them), every entry name (no empty, absolute,
// drive-letter, backslash, NUL or control-character names, no "." or
// ".." segments, valid UTF-8, no two names equal or equal once
// case-folded and NFC-normalised), every entry's size and compression
// ratio and their total, that no entry's header or data lies inside
// another's data (by the central headers here; by the local header too as
// each entry is opened), meals.json (present, within lim.MaxJSONBytes,
// its schema with strict types, at most lim.MaxMeals meals, a format this
// reader knows), manifest.json if there is one (required from format 2:
// its format and counts, every file it lists present with the size it
// says, and the SHA-256 of every file but the photos), and every photo a
// meal names present and within lim.MaxPhotoBytes. Photos' own checksums
// are checked as they are read (OpenPhoto, Verify). Zero fields of lim
// take DefaultLimits. Anything refused is a *Refusal; any other error is
// ra's.
func Open(ra io.ReaderAt, size int64, lim Limits) (*Archive, error) {
	k := &keepErr{ra: ra}
	a, err := open(k, size, lim)
	if err != nil {
		// A read that failed may look like damage to the zip library:
		// ra's error is the answer then, not a refusal.
		if rerr := k.first(); rerr != nil {
			return nil, rerr
		}
		return nil, err
	}
	return a, nil
}

// keepErr passes ReadAt through to ra and keeps the first error other
// than io.EOF that ra returned.
type keepErr struct {
	ra  io.ReaderAt
	mu  sync.Mutex
	err error
}

func (k *keepErr) ReadAt(p []byte, off int64) (int, error) {
	n, err := k.ra.ReadAt(p, off)
	if err != nil && !errors.Is(err, io.EOF) {
		k.mu.Lock()
		if k.err == nil {
			k.err = err
		}
		k.mu.Unlock()
	}
	return n, err
}

func (k *keepErr) first() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.err
}

func open(ra io.ReaderAt, size int64, lim Limits) (*Archive, error) {
	lim = lim.withDefaults()
	dir, err := readDirectory(ra, size)
	if err != nil {
		return nil, err
	}
	if dir.entries > uint64(lim.MaxEntries) {
		return nil, refuse("the zip has %d entries; at most %d are taken", dir.entries, lim.MaxEntries)
	}
	if dir.size > uint64(lim.MaxDirectoryBytes) {
		return nil, refuse("the zip's central directory is %d bytes; at most %d are taken", dir.size, lim.MaxDirectoryBytes)
	}
	spans, err := walkDirectory(ra, dir)
	if err != nil {
		return nil, err
	}
	view := newCheckedView(ra, dir)
	zr, err := zip.NewReader(view, view.Size())
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		return nil, refuse("the zip's central directory cannot be read (%v): the file is damaged or not a zip archive", err)
	}
	if uint64(len(zr.File)) != dir.entries {
		return nil, refuse("the zip's end record counts %d entries but its central directory holds %d: the file is damaged", dir.entries, len(zr.File))
	}
	for i, f := range zr.File {
		if f.CompressedSize64 != uint64(spans[i].size) {
			return nil, refuse("the zip's central directory reads two ways (%q): the file is damaged or hostile", f.Name)
		}
	}
	room, err := checkLayout(zr.File, spans, int64(dir.offset))
	if err != nil {
		return nil, err
	}
	a := &Archive{files: make(map[string]file, len(zr.File)), lim: lim, ra: view}
	if err := a.checkEntries(zr.File, spans, room); err != nil {
		return nil, err
	}
	if err := a.readManifest(); err != nil {
		return nil, err
	}
	if err := a.readMeals(); err != nil {
		return nil, err
	}
	if err := a.checkManifest(); err != nil {
		return nil, err
	}
	if err := a.checkPhotos(); err != nil {
		return nil, err
	}
	return a, nil
}

// checkEntries checks every entry's name, method and sizes, and indexes
// the files by name with where they lie (spans and room, in the order of
// files).
func (a *Archive) checkEntries(files []*zip.File, spans []span, room []int64) error {
	fold := cases.Fold()
	// The folded names by their FNV-1a hash, to the entry's index: a
	// string a name would cost several times as much, for every entry of
	// the directory (a hash seen twice is compared in full).
	folded := make(map[uint64]int, len(files))
	foldName := func(name string) string { return norm.NFC.String(fold.String(name)) }
	var total uint64
	for i, f := range files {
		if reason := badName(f.Name); reason != "" {
			return refuse("entry name %q %s", f.Name, reason)
		}
		if _, dup := a.files[f.Name]; dup {
			return refuse("the zip holds %q twice", f.Name)
		}
		key := foldName(f.Name)
		h := fnv.New64a()
		h.Write([]byte(key))
		sum := h.Sum64()
		if other, seen := folded[sum]; seen && foldName(files[other].Name) == key {
			return refuse("the zip holds both %q and %q, which are one name on a case-insensitive file system", files[other].Name, f.Name)
		} else if !seen {
			folded[sum] = i
		}
		a.files[f.Name] = file{File: f, hdr: spans[i].hdr, room: room[i]}
		if f.Flags&0x1 != 0 {
			return refuse("%q is encrypted; export again without a password", f.Name)
		}
		if f.Method != zip.Store && f.Method != zip.Deflate {
			return refuse("%q uses compression method %d; only stored and deflated entries are read", f.Name, f.Method)
		}
		u, c := f.UncompressedSize64, f.CompressedSize64
		if u > uint64(a.lim.MaxFileBytes) {
			return refuse("%q is %d bytes uncompressed; at most %d are taken for one file", f.Name, u, a.lim.MaxFileBytes)
		}
		if u >= uint64(a.lim.RatioMinBytes) && (c == 0 || u/c > uint64(a.lim.MaxRatio)) {
			return refuse("%q expands from %d to %d bytes, more than %d times: a zip bomb, or not an archive ndiro wrote", f.Name, c, u, a.lim.MaxRatio)
		}
		total += u
		if total > uint64(a.lim.MaxTotalBytes) {
			return refuse("the zip's files add up to more than %d bytes uncompressed", a.lim.MaxTotalBytes)
		}
	}
	return nil
}

// maxName is the longest entry name taken, in bytes.
const maxName = 1024

// badName says what is wrong with an entry name, or "" if nothing: an
// archive is a tree of relative names that unpacks the same on every file
// system, never a way out of the folder it is unpacked in.
func badName(name string) string {
	switch {
	case name == "":
		return "is empty"
	case len(name) > maxName:
		return fmt.Sprintf("is longer than %d bytes", maxName)
	case !utf8.ValidString(name):
		return "is not valid UTF-8"
	case strings.ContainsRune(name, 0):
		return "holds a NUL character"
	case strings.ContainsRune(name, '\\'):
		return "holds a backslash; names in a zip use / between folders"
	case strings.HasPrefix(name, "/"):
		return "is absolute; names in an archive must be relative"
	case len(name) >= 2 && name[1] == ':' && name[0] < utf8.RuneSelf && unicode.IsLetter(rune(name[0])):
		return "starts with a drive letter; names in an archive must be relative"
	}
	if strings.IndexFunc(name, unicode.IsControl) >= 0 {
		return "holds a control character"
	}
	segs := strings.Split(strings.TrimSuffix(name, "/"), "/")
	for _, s := range segs {
		switch s {
		case "..":
			return "climbs out of the archive with \"..\""
		case ".", "":
			return "has an empty or \".\" folder in it"
		}
	}
	return ""
}

// readManifest reads manifest.json if the zip has one.
func (a *Archive) readManifest() error {
	f, ok := a.files[ManifestFile]
	if !ok {
		return nil
	}
	r, err := a.openEntry(f, a.lim.MaxJSONBytes, "")
	if err != nil {
		return err
	}
	defer r.Close()
	var m Manifest
	dec := json.NewDecoder(r)
	if err := dec.Decode(&m); err != nil {
		return jsonRefusal(ManifestFile, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return refuse("%s holds more than one JSON value", ManifestFile)
	}
	a.manifest = &m
	a.sums = make(map[string]FileSum, len(m.Files))
	for _, s := range m.Files {
		if _, dup := a.sums[s.Name]; dup {
			return refuse("%s lists %q twice", ManifestFile, s.Name)
		}
		if len(s.SHA256) != 64 || strings.Trim(s.SHA256, "0123456789abcdef") != "" {
			return refuse("%s: the sha256 of %q is not 64 lowercase hex digits", ManifestFile, s.Name)
		}
		a.sums[s.Name] = s
	}
	return nil
}

// readMeals reads and checks meals.json, verifying it against the
// manifest's SHA-256 as it is read.
func (a *Archive) readMeals() error {
	f, ok := a.files[MealsFile]
	if !ok {
		return refuse("%s is missing: this is not an ndiro export, or not all of one", MealsFile)
	}
	// Counted first, holding no meal, then read: a meals.json past
	// MaxMeals costs its reading, not the memory of MaxMeals meals.
	if _, err := a.decodeMeals(f, false); err != nil {
		return err
	}
	meals, err := a.decodeMeals(f, true)
	if err != nil {
		return err
	}
	a.meals = meals
	return nil
}

// decodeMeals reads the entry f as meals.json (decodeMeals, keeping the
// meals or only counting them) to its end, where its checksums are
// checked, and sets a.header.
func (a *Archive) decodeMeals(f file, keep bool) ([]Meal, error) {
	r, err := a.openEntry(f, a.lim.MaxJSONBytes, a.sums[MealsFile].SHA256)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	h, meals, err := decodeMeals(r, a.lim.MaxMeals, a.lim.MaxMealBytes, keep)
	if err != nil {
		return nil, err
	}
	// The checksum is checked at the end of the entry: read to it.
	if _, err := io.Copy(io.Discard, r); err != nil {
		return nil, err
	}
	a.header = h
	return meals, nil
}

// checkManifest holds meals.json and the zip to what the manifest says.
func (a *Archive) checkManifest() error {
	m := a.manifest
	if m == nil {
		if a.header.Format >= Format2 {
			return refuse("%s is missing, though meals.json is format %d: the archive is not whole", ManifestFile, a.header.Format)
		}
		return nil
	}
	if m.Format != a.header.Format {
		return refuse("%s says format %d but meals.json says %d: the files come from different exports", ManifestFile, m.Format, a.header.Format)
	}
	if m.Meals != len(a.meals) {
		return refuse("%s counts %d meals but meals.json holds %d: the archive is not whole", ManifestFile, m.Meals, len(a.meals))
	}
	if _, ok := a.sums[MealsFile]; !ok {
		return refuse("%s does not list %s", ManifestFile, MealsFile)
	}
	photos := 0
	for _, s := range m.Files {
		f, ok := a.files[s.Name]
		if !ok {
			return refuse("%q, which %s lists, is missing from the zip: the archive is not whole", s.Name, ManifestFile)
		}
		if f.UncompressedSize64 != uint64(s.Size) || s.Size < 0 {
			return refuse("%q is %d bytes in the zip but %d in %s: the archive is damaged", s.Name, f.UncompressedSize64, s.Size, ManifestFile)
		}
		if strings.HasPrefix(s.Name, photoDir) {
			photos++
			continue
		}
		if s.Name == MealsFile {
			continue // checked as it was read
		}
		if err := a.drain(f, a.lim.MaxFileBytes, s.SHA256); err != nil {
			return err
		}
	}
	if m.Photos != photos {
		return refuse("%s counts %d photos but lists %d photo files: the archive is damaged", ManifestFile, m.Photos, photos)
	}
	return nil
}

// checkPhotos checks that every photo a meal names is in the zip, within
// the photo limit, and notes its size.
func (a *Archive) checkPhotos() error {
	for i := range a.meals {
		p := a.meals[i].Photo
		if p == nil || p.Missing {
			continue
		}
		f, ok := a.files[p.File]
		if !ok {
			return refuse("%s: meal %d names the photo %q, which is not in the zip", MealsFile, i+1, p.File)
		}
		if f.UncompressedSize64 > uint64(a.lim.MaxPhotoBytes) {
			return refuse("the photo %q is %d bytes; at most %d are taken for a photo", p.File, f.UncompressedSize64, a.lim.MaxPhotoBytes)
		}
		if a.manifest != nil {
			if _, ok := a.sums[p.File]; !ok {
				return refuse("%s does not list the photo %q that meal %d names", ManifestFile, p.File, i+1)
			}
		}
		p.Size = int64(f.UncompressedSize64)
	}
	return nil
}

// OpenPhoto streams the photo ref names (one of Meals' refs) from the
// zip. The reader fails with a *Refusal if the entry holds more bytes
// than the zip declares, fewer, bytes whose CRC-32 differs from the zip's
// or whose SHA-256 differs from the manifest's: an error from Read, so a
// caller that keeps what it read must read to io.EOF first. A ref that is
// nil, Missing or names no photo of the zip is refused at once.
func (a *Archive) OpenPhoto(ref *PhotoRef) (io.ReadCloser, error) {
	if ref == nil || ref.Missing {
		return nil, refuse("the meal has no photo in the zip")
	}
	f, ok := a.files[ref.File]
	if !ok {
		return nil, refuse("the photo %q is not in the zip", ref.File)
	}
	return a.openEntry(f, a.lim.MaxPhotoBytes, a.sums[ref.File].SHA256)
}

// Verify reads every file the manifest lists and every photo a meal
// names to its end, checking sizes, CRC-32s and SHA-256s as OpenPhoto
// does: the whole archive is sound if it returns nil. It reads every
// byte, so an import runs it only where it can afford to (a backup's
// check).
func (a *Archive) Verify() error {
	seen := map[string]bool{}
	check := func(name string, max int64) error {
		if seen[name] {
			return nil
		}
		seen[name] = true
		return a.drain(a.files[name], max, a.sums[name].SHA256)
	}
	for _, s := range a.sumsInOrder() {
		if err := check(s.Name, a.lim.MaxFileBytes); err != nil {
			return err
		}
	}
	for i := range a.meals {
		if p := a.meals[i].Photo; p != nil && !p.Missing {
			if err := check(p.File, a.lim.MaxPhotoBytes); err != nil {
				return err
			}
		}
	}
	return nil
}

func (a *Archive) sumsInOrder() []FileSum {
	if a.manifest == nil {
		return nil
	}
	return a.manifest.Files
}

// drain reads entry f to its end through the checks of openEntry.
func (a *Archive) drain(f file, max int64, sum string) error {
	r, err := a.openEntry(f, max, sum)
	if err != nil {
		return err
	}
	defer r.Close()
	_, err = io.Copy(io.Discard, r)
	return err
}
