package photo

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
	"testing"
)

// u16 and u32 are big-endian fields.
func u16(v uint16) []byte { return binary.BigEndian.AppendUint16(nil, v) }
func u32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// TestPitm: the primary item's ID, 16 bits in version 0, 32 after.
func TestPitm(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		body []byte
		want uint32
		err  bool
	}{
		{"version 0", cat([]byte{0, 0, 0, 0}, u16(7)), 7, false},
		{"version 1", cat([]byte{1, 0, 0, 0}, u32(70000)), 70000, false},
		{"cut short", []byte{0, 0, 0, 0, 7}, 0, true},
	} {
		got, err := parsePitm(tc.body)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("%s: parsePitm = %d, %v; want %d, error %v", tc.name, got, err, tc.want, tc.err)
		}
	}
}

// infeBox is an infe box of version v for item id of type typ.
func infeBox(v byte, id uint32, typ string) []byte {
	b := []byte{v, 0, 0, 0}
	if v == 3 {
		b = append(b, u32(id)...)
	} else {
		b = append(b, u16(uint16(id))...)
	}
	return heifBox("infe", b, u16(0), []byte(typ), []byte{0})
}

// TestIinf: the Exif item is found among the item infos (infe versions 2
// and 3, entry count 16 bits in version 0, 32 after); other versions and
// types are passed over.
func TestIinf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		body []byte
		want uint32
		err  bool
	}{
		{"infe v2", cat([]byte{0, 0, 0, 0}, u16(2), infeBox(2, 1, "hvc1"), infeBox(2, 9, "Exif")), 9, false},
		{"infe v3, iinf v1", cat([]byte{1, 0, 0, 0}, u32(1), infeBox(3, 1<<20, "Exif")), 1 << 20, false},
		{"no Exif", cat([]byte{0, 0, 0, 0}, u16(1), infeBox(2, 1, "hvc1")), 0, false},
		{"infe v1 passed over", cat([]byte{0, 0, 0, 0}, u16(1), infeBox(1, 4, "Exif")), 0, false},
		{"infe cut short", cat([]byte{0, 0, 0, 0}, u16(1), heifBox("infe", []byte{2, 0, 0, 0, 0})), 0, false},
		{"entry past the end", cat([]byte{0, 0, 0, 0}, u16(1), []byte("\x00\x00\x00\x40infe")), 0, true},
		{"too short", []byte{0, 0, 0}, 0, true},
	} {
		got, err := exifItemID(tc.body)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("%s: exifItemID = %d, %v; want %d, error %v", tc.name, got, err, tc.want, tc.err)
		}
	}
}

// TestIpma: the properties of one item, by 1-based ipco index (7 bits, or
// 15 with flags bit 0; the essential bit dropped), item IDs 16 bits in
// version 0 and 32 after.
func TestIpma(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name           string
		body           []byte
		version, flags byte
		want           []int
		err            bool
	}{
		{"version 0, 7-bit", cat(u32(2), u16(1), []byte{1, 0x81}, u16(2), []byte{2, 2, 3}), 0, 0, []int{2, 3}, false},
		{"version 1, 15-bit", cat(u32(1), u32(2), []byte{2}, u16(0x8000|300), u16(4)), 1, 1, []int{300, 4}, false},
		{"item not there", cat(u32(1), u16(1), []byte{1, 1}), 0, 0, nil, true},
		{"indexes cut short", cat(u32(1), u16(2), []byte{3, 1}), 0, 0, nil, true},
		{"count too large", cat(u32(1000), u16(1), []byte{1, 1}), 0, 0, nil, true},
	} {
		got, err := associations(tc.body, tc.version, tc.flags, 2)
		if !slices.Equal(got, tc.want) || (err != nil) != tc.err {
			t.Errorf("%s: associations = %v, %v; want %v, error %v", tc.name, got, err, tc.want, tc.err)
		}
	}
}

// TestItemProperties: ispe gives the size, irot the quarter turns, colr
// an ICC profile (prof, rICC; dropped over maxICC) or nclx primaries;
// each refused when cut short; other properties are ignored.
func TestItemProperties(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		typ  string
		body []byte
		want heifInfo
		err  bool
	}{
		{"ispe", "ispe", cat(u32(0), u32(4032), u32(3024)), heifInfo{Width: 4032, Height: 3024}, false},
		{"ispe cut short", "ispe", cat(u32(0), u32(4032)), heifInfo{}, true},
		{"irot", "irot", []byte{3}, heifInfo{Rotation: 3}, false},
		{"irot high bits", "irot", []byte{0xFD}, heifInfo{Rotation: 1}, false},
		{"irot empty", "irot", nil, heifInfo{}, true},
		{"colr prof", "colr", cat([]byte("prof"), []byte("ICC")), heifInfo{ICC: []byte("ICC")}, false},
		{"colr rICC", "colr", cat([]byte("rICC"), []byte("ICC")), heifInfo{ICC: []byte("ICC")}, false},
		{"colr prof over maxICC", "colr", cat([]byte("prof"), make([]byte, maxICC+1)), heifInfo{}, false},
		{"colr nclx", "colr", cat([]byte("nclx"), u16(12), u16(13), u16(6), []byte{0x80}), heifInfo{Primaries: 12}, false},
		{"colr cut short", "colr", []byte("nc"), heifInfo{}, true},
		{"other", "", []byte{1}, heifInfo{}, false},
	} {
		var got heifInfo
		err := applyProperty(&got, tc.typ, tc.body)
		if got.Width != tc.want.Width || got.Height != tc.want.Height || got.Rotation != tc.want.Rotation ||
			!bytes.Equal(got.ICC, tc.want.ICC) || got.Primaries != tc.want.Primaries || (err != nil) != tc.err {
			t.Errorf("%s: applyProperty = %+v, %v; want %+v, error %v", tc.name, got, err, tc.want, tc.err)
		}
	}
}

// ilocBody is an iloc body of version v: offset and length fields of 4
// bytes, base offsets of base bytes, then the items as given.
func ilocBody(v byte, base int, items ...[]byte) []byte {
	b := []byte{v, 0, 0, 0, 0x44, byte(base << 4)}
	if v == 2 {
		b = append(b, u32(uint32(len(items)))...)
	} else {
		b = append(b, u16(uint16(len(items)))...)
	}
	return cat(b, cat(items...))
}

// TestIloc: the Exif item's data is read from where iloc says, its
// extents joined in order, after the base offset and the 4-byte offset
// to the TIFF header (ISO/IEC 23008-12 A.2.1); data not at file offsets,
// past the end of the file, or over maxHEIFExif is not read.
func TestIloc(t *testing.T) {
	t.Parallel()
	file := []byte("....\x00\x00\x00\x00MM\x00*TIFF-ONE\x00\x00\x00\x02xxTIFF-TWO")
	for _, tc := range []struct {
		name string
		iloc []byte
		want string
	}{
		{"version 0, one extent", ilocBody(0, 0, cat(u16(5), u16(0), u16(1), u32(4), u32(16))), "MM\x00*TIFF-ONE"},
		{"version 1, base offset, two extents", ilocBody(1, 4, cat(u16(5), u16(0), u16(0), u32(4), u16(2), u32(0), u32(8), u32(8), u32(8))), "MM\x00*TIFF-ONE"},
		{"version 2, 32-bit IDs, TIFF offset 2", ilocBody(2, 0, cat(u32(9), u16(0), u16(0), u16(1), u32(4), u32(4)), cat(u32(5), u16(0), u16(0), u16(1), u32(20), u32(14))), "TIFF-TWO"},
		{"construction method 1 (idat)", ilocBody(1, 0, cat(u16(5), u16(1), u16(0), u16(1), u32(4), u32(16))), ""},
		{"extent past the file", ilocBody(0, 0, cat(u16(5), u16(0), u16(1), u32(30), u32(16))), ""},
		{"TIFF offset past the data", ilocBody(0, 0, cat(u16(5), u16(0), u16(1), u32(0), u32(4))), ""},
		{"item not listed", ilocBody(0, 0, cat(u16(6), u16(0), u16(1), u32(4), u32(16))), ""},
		{"cut short", ilocBody(0, 0, cat(u16(5), u16(0), u16(1), u32(4))), ""},
	} {
		if got := itemData(bytes.NewReader(file), int64(len(file)), tc.iloc, 5); string(got) != tc.want {
			t.Errorf("%s: itemData = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestTopLevelBoxes: the brand comes from the first ftyp, the meta box
// is read whole up to maxHEIFMeta, and every other box is skipped by its
// header, whatever its size (64-bit, or 0: to the end).
func TestTopLevelBoxes(t *testing.T) {
	t.Parallel()
	meta := heifBox("meta", []byte{0, 0, 0, 0}, heifBox("pitm", []byte{0, 0, 0, 0, 0, 1}))
	toEnd := cat(u32(0), []byte("mdat"), make([]byte, 100))
	for _, tc := range []struct {
		name string
		file []byte
		meta int // the meta body's length; -1: errHEIF
	}{
		{"ftyp, meta, mdat to the end", cat(heifBox("ftyp", heifFtypBody), meta, toEnd), len(meta) - 8},
		{"a 64-bit free box before meta", cat(heifBox("ftyp", heifFtypBody), heifBox64("free", 0, make([]byte, 1000)), meta), len(meta) - 8},
		{"meta over maxHEIFMeta", cat(heifBox("ftyp", heifFtypBody), heifBox("meta", make([]byte, maxHEIFMeta+1))), -1},
		{"no ftyp", cat(meta, toEnd), -1},
		{"mdat to the end hides the meta after it", cat(heifBox("ftyp", heifFtypBody), toEnd, meta), -1},
	} {
		brand, got, err := heifTopLevel(bytes.NewReader(tc.file), int64(len(tc.file)))
		switch {
		case tc.meta < 0 && !errors.Is(err, errHEIF):
			t.Errorf("%s: heifTopLevel = %q, %d bytes, %v; want errHEIF", tc.name, brand, len(got), err)
		case tc.meta >= 0 && (err != nil || brand != "heic" || len(got) != tc.meta):
			t.Errorf("%s: heifTopLevel = %q, %d bytes, %v; want heic, %d bytes", tc.name, brand, len(got), err, tc.meta)
		}
	}
}
