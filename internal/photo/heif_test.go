package photo

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"testing"
	"time"
)

// TestHEIFGamut: the colr box is read as a JPEG's profile is: an ICC
// profile by its colorants, nclx by its colour primaries.
func TestHEIFGamut(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		info heifInfo
		want Gamut
	}{
		{"no colr", heifInfo{}, GamutSRGB},
		{"prof Display P3", heifInfo{ICC: displayP3}, GamutDisplayP3},
		{"nclx P3 (12)", heifInfo{Primaries: 12}, GamutDisplayP3},
		{"nclx BT.709 (1)", heifInfo{Primaries: 1}, GamutSRGB},
		{"nclx BT.2020 (9)", heifInfo{Primaries: 9}, GamutOtherRGB},
	} {
		if got := tc.info.gamut(); got != tc.want {
			t.Errorf("%s: gamut = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// heifBox is an ISOBMFF box: 32-bit size, type, body.
func heifBox(typ string, body ...[]byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(8+len(bytes.Join(body, nil))))
	return append(append(b, typ...), bytes.Join(body, nil)...)
}

// heifBox64 is a box with a 64-bit size (size field 1) of largesize,
// which is the whole box's length unless given.
func heifBox64(typ string, largesize uint64, body []byte) []byte {
	if largesize == 0 {
		largesize = uint64(16 + len(body))
	}
	b := binary.BigEndian.AppendUint32(nil, 1)
	b = append(b, typ...)
	b = binary.BigEndian.AppendUint64(b, largesize)
	return append(b, body...)
}

var (
	heifFtypBody = []byte("heic\x00\x00\x00\x00mif1heic")
	// heifMeta is a meta box naming item 1 primary, 640×480 (ispe).
	heifMeta = heifBox("meta", []byte{0, 0, 0, 0},
		heifBox("pitm", []byte{0, 0, 0, 0, 0, 1}),
		heifBox("iprp",
			heifBox("ipco", heifBox("ispe", []byte{0, 0, 0, 0, 0, 0, 2, 128, 0, 0, 1, 224})),
			heifBox("ipma", []byte{0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 1, 1})))
	heifMdat = heifBox("mdat", []byte("coded image"))
)

func heifFile(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// TestParseHEIFMalformed: whatever a container's boxes say (truncated,
// sizes past the end, 64-bit sizes, a second ftyp), parseHEIF answers
// with the container's facts or errHEIF, never a panic; the pipeline
// turns errHEIF into ErrDamaged, the upload's "damaged" message (422).
func TestParseHEIFMalformed(t *testing.T) {
	t.Parallel()
	valid := heifFile(heifBox("ftyp", heifFtypBody), heifMeta, heifMdat)
	for _, tc := range []struct {
		name string
		data []byte
		ok   bool
	}{
		{"valid", valid, true},
		{"ftyp with a 64-bit size", heifFile(heifBox64("ftyp", 0, heifFtypBody), heifMeta, heifMdat), true},
		{"second ftyp with a 64-bit size", heifFile(heifBox("ftyp", heifFtypBody), heifBox64("ftyp", 0, heifFtypBody), heifMeta, heifMdat), true},
		{"second ftyp, 64-bit size, no brand", heifFile(heifBox("ftyp", heifFtypBody), heifBox64("ftyp", 0, nil), heifMeta, heifMdat), false},
		{"second ftyp, 64-bit size cut short", heifFile(heifBox("ftyp", heifFtypBody), []byte("\x00\x00\x00\x01ftyp\x00\x00")), false},
		{"64-bit size past the end", heifFile(heifBox("ftyp", heifFtypBody), heifBox64("mdat", 1<<40, nil)), false},
		{"64-bit size negative as int64", heifFile(heifBox("ftyp", heifFtypBody), heifMeta, heifBox64("mdat", 1<<63+16, nil)), false},
		{"64-bit size below its header", heifFile(heifBox("ftyp", heifFtypBody), heifMeta, heifBox64("mdat", 8, nil)), false},
		{"64-bit meta", heifFile(heifBox("ftyp", heifFtypBody), heifBox64("meta", 0, heifMeta[8:]), heifMdat), true},
		{"box size past the end", heifFile(heifBox("ftyp", heifFtypBody), heifMeta, []byte("\xff\xff\xff\xffmdat")), false},
		{"ftyp too short for a brand", heifFile(heifBox("ftyp", []byte("he")), heifMeta), false},
		{"no meta", heifFile(heifBox("ftyp", heifFtypBody), heifMdat), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info, err := parseHEIF(bytes.NewReader(tc.data), int64(len(tc.data)))
			switch {
			case tc.ok && (err != nil || info.Brand != "heic" || info.Width != 640 || info.Height != 480):
				t.Errorf("parseHEIF = %+v, %v; want heic 640×480", info, err)
			case !tc.ok && !errors.Is(err, errHEIF):
				t.Errorf("parseHEIF = %+v, %v; want errHEIF", info, err)
			}
			if tc.ok {
				return
			}
			want := ErrDamaged
			if _, serr := Sniff(tc.data); serr != nil {
				want = serr // not even a HEIC file by its first box
			}
			if _, err = NewPipeline(DefaultBudget, time.Minute).Process(context.Background(), tc.data); !errors.Is(err, want) {
				t.Errorf("Process = %v, want %v", err, want)
			}
		})
	}
	// Every cut and every byte overwritten of the files above: an answer,
	// never a panic.
	for _, data := range [][]byte{valid, heifFile(heifBox("ftyp", heifFtypBody), heifBox64("ftyp", 0, heifFtypBody), heifBox64("meta", 0, heifMeta[8:]), heifMdat)} {
		for n := range len(data) {
			if _, err := parseHEIF(bytes.NewReader(data[:n]), int64(n)); err != nil && !errors.Is(err, errHEIF) {
				t.Errorf("parseHEIF of the first %d bytes = %v, want errHEIF", n, err)
			}
			for _, v := range []byte{0, 1, 0x7f, 0xff} {
				b := bytes.Clone(data)
				b[n] = v
				if _, err := parseHEIF(bytes.NewReader(b), int64(len(b))); err != nil && !errors.Is(err, errHEIF) {
					t.Errorf("parseHEIF with byte %d set to %#x = %v, want errHEIF", n, v, err)
				}
			}
		}
	}
}

// FuzzParseHEIF: parseHEIF never panics, refuses with errHEIF, and
// returns no profile or Exif item over its bound (seed corpus:
// testdata/fuzz/FuzzParseHEIF).
func FuzzParseHEIF(f *testing.F) {
	f.Add(heifFile(heifBox("ftyp", heifFtypBody), heifMeta, heifMdat))
	f.Add(heifFile(heifBox("ftyp", heifFtypBody), heifBox64("ftyp", 0, nil), heifMeta))
	f.Fuzz(func(t *testing.T, data []byte) {
		info, err := parseHEIF(bytes.NewReader(data), int64(len(data)))
		if err != nil && !errors.Is(err, errHEIF) {
			t.Errorf("parseHEIF = %v, want errHEIF", err)
		}
		if err == nil && (len(info.ICC) > maxICC || len(info.Exif) > maxHEIFExif) {
			t.Errorf("parseHEIF = a %d-byte profile, a %d-byte Exif item; want at most %d and %d", len(info.ICC), len(info.Exif), maxICC, maxHEIFExif)
		}
	})
}
