package photo

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"
)

// tag is one TIFF entry: a SHORT if s is "", else ASCII s.
type tag struct {
	id uint16
	v  uint16
	s  string
}

// tiffOf builds TIFF data in byte order bo: IFD0 with ifd0 (and a
// pointer to an Exif sub-IFD holding exif, if any), then IFD1 with ifd1
// (if any).
func tiffOf(bo binary.AppendByteOrder, ifd0, exif, ifd1 []tag) []byte {
	var out bytes.Buffer
	if bo == binary.AppendByteOrder(binary.LittleEndian) {
		out.WriteString("II")
	} else {
		out.WriteString("MM")
	}
	out.Write(bo.AppendUint16(nil, 42))
	out.Write(bo.AppendUint32(nil, 8))
	// Each IFD: count, entries, next offset; ASCII values after all.
	type ifd struct{ tags []tag }
	ifds := []ifd{{ifd0}}
	if len(exif) > 0 {
		ifds[0].tags = append(append([]tag{}, ifd0...), tag{id: 0x8769})
		ifds = append(ifds, ifd{exif})
	}
	if len(ifd1) > 0 {
		ifds = append(ifds, ifd{ifd1})
	}
	size := func(d ifd) int { return 2 + 12*len(d.tags) + 4 }
	offs := []int{8}
	for i := range ifds[:len(ifds)-1] {
		offs = append(offs, offs[i]+size(ifds[i]))
	}
	data := offs[len(offs)-1] + size(ifds[len(ifds)-1])
	var values bytes.Buffer
	for i, d := range ifds {
		out.Write(bo.AppendUint16(nil, uint16(len(d.tags))))
		for _, tg := range d.tags {
			out.Write(bo.AppendUint16(nil, tg.id))
			switch {
			case tg.id == 0x8769: // LONG offset of the Exif IFD
				out.Write(bo.AppendUint16(nil, 4))
				out.Write(bo.AppendUint32(nil, 1))
				out.Write(bo.AppendUint32(nil, uint32(offs[1])))
			case tg.s != "":
				out.Write(bo.AppendUint16(nil, 2))
				out.Write(bo.AppendUint32(nil, uint32(len(tg.s)+1)))
				out.Write(bo.AppendUint32(nil, uint32(data+values.Len())))
				values.WriteString(tg.s + "\x00")
			default:
				out.Write(bo.AppendUint16(nil, 3))
				out.Write(bo.AppendUint32(nil, 1))
				out.Write(bo.AppendUint16(nil, tg.v))
				out.Write([]byte{0, 0})
			}
		}
		next := uint32(0)
		if len(ifd1) > 0 && i == 0 {
			next = uint32(offs[len(offs)-1])
		}
		out.Write(bo.AppendUint32(nil, next))
	}
	out.Write(values.Bytes())
	return out.Bytes()
}

// TestReadEXIF: the orientation is IFD0's, never the thumbnail's (IFD1);
// the capture time is DateTimeOriginal, else CreateDate, else ModifyDate
// (DateTime), skipping dates before 1990 and ones that do not parse; both
// byte orders; damaged data is no EXIF.
func TestReadEXIF(t *testing.T) {
	t.Parallel()
	const (
		orientation = 0x0112
		modify      = 0x0132
		original    = 0x9003
		create      = 0x9004
	)
	day := func(s string) time.Time {
		tm, err := time.Parse(time.DateTime, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	for _, tc := range []struct {
		name  string
		tiff  []byte
		o     int
		taken time.Time
	}{
		{"big-endian, all three times", tiffOf(binary.BigEndian, []tag{{id: orientation, v: 6}, {id: modify, s: "2024:01:03 10:00:00"}},
			[]tag{{id: original, s: "2024:01:01 08:30:00"}, {id: create, s: "2024:01:02 09:00:00"}}, nil), 6, day("2024-01-01 08:30:00")},
		{"little-endian, CreateDate", tiffOf(binary.LittleEndian, []tag{{id: orientation, v: 3}},
			[]tag{{id: create, s: "2023:12:31 23:59:59"}}, nil), 3, day("2023-12-31 23:59:59")},
		{"ModifyDate only", tiffOf(binary.LittleEndian, []tag{{id: modify, s: "2020:02:29 12:00:00"}}, nil, nil), 0, day("2020-02-29 12:00:00")},
		{"original before 1990 skipped", tiffOf(binary.BigEndian, []tag{{id: modify, s: "2021:05:05 05:05:05"}},
			[]tag{{id: original, s: "1970:01:01 00:00:00"}}, nil), 0, day("2021-05-05 05:05:05")},
		{"original not a date", tiffOf(binary.BigEndian, nil, []tag{{id: original, s: "0000:00:00 00:00:00"}, {id: create, s: "2022:06:01 07:00:00"}}, nil),
			0, day("2022-06-01 07:00:00")},
		{"thumbnail orientation ignored", tiffOf(binary.LittleEndian, []tag{{id: 0x0100, v: 640}}, nil, []tag{{id: orientation, v: 8}}), 0, time.Time{}},
		{"orientation out of range", tiffOf(binary.LittleEndian, []tag{{id: orientation, v: 9}}, nil, nil), 0, time.Time{}},
		{"damaged", []byte("MM\x00*\x00\x00\x00\x08\xff\xff"), 0, time.Time{}},
		{"not TIFF", []byte("this is not TIFF data at all"), 0, time.Time{}},
		{"empty", nil, 0, time.Time{}},
	} {
		o, taken := readEXIF(tc.tiff)
		if o != tc.o || !taken.Equal(tc.taken) {
			t.Errorf("%s: readEXIF = %d, %v; want %d, %v", tc.name, o, taken, tc.o, tc.taken)
		}
	}
}
