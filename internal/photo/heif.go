package photo

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// The HEIF container is read by a parser of ours, one function per box,
// not by go4.org/media/heif: that package wants the meta box right after
// ftyp, reads every child of meta whole with no bound, reads no colr box
// (the pipeline's colour decision) and assumes the Exif item's TIFF
// header 4 bytes in rather than reading the offset the item states.

// heifInfo is what the pipeline reads from a HEIF container's own boxes
// before anything is decoded (ISO/IEC 23008-12, ISO/IEC 14496-12).
type heifInfo struct {
	// Brand is the ftyp major brand ("heic").
	Brand string
	// Width and Height are the primary image's stored size (ispe).
	Width, Height int
	// Rotation is the irot angle in quarter turns anticlockwise (0–3); the
	// decoder applies it, so the decoded pixels are upright.
	Rotation int
	// ICC is the colr box's profile ('prof' or 'rICC'), if any (a part
	// of the meta box, at most maxHEIFMeta); Primaries its nclx
	// colour_primaries (1: BT.709/sRGB, 12: Display P3), 0 if none.
	ICC       []byte
	Primaries int
	// Exif is the Exif item's TIFF data, nil if none or over
	// maxHEIFExif.
	Exif []byte
}

// gamut classifies the colr box as classifyICC does a profile.
func (h *heifInfo) gamut() Gamut {
	if h.ICC != nil {
		return classifyICC(h.ICC)
	}
	switch h.Primaries {
	case 0, 1, 2: // unset, BT.709 (sRGB), unspecified
		return GamutSRGB
	case 12: // SMPTE EG 432-1: Display P3
		return GamutDisplayP3
	}
	return GamutOtherRGB
}

// errHEIF is the error of a container the parser cannot follow.
var errHEIF = errors.New("photo: damaged HEIF container")

// parseHEIF reads the ftyp and meta boxes of a HEIF file of size bytes:
// the brand, the primary image's size, rotation and colour, and its Exif
// item. It reads the headers of the top-level boxes (through a cursor,
// skipping their bodies unread), the meta box (at most maxHEIFMeta
// bytes) and the Exif item (at most maxHEIFExif), never the coded image
// data. Any container it cannot follow, whatever its bytes (truncated,
// sizes out of range, 64-bit sizes, boxes repeated, a meta box over its
// bound), is errHEIF; only the first ftyp box counts.
func parseHEIF(r io.ReaderAt, size int64) (*heifInfo, error) {
	brand, meta, err := heifTopLevel(r, size)
	if err != nil {
		return nil, err
	}
	m, err := parseMeta(meta)
	if err != nil {
		return nil, err
	}
	info := &heifInfo{Brand: brand}
	if err := m.primaryProperties(info); err != nil {
		return nil, err
	}
	if m.exifItem != 0 && m.iloc != nil {
		info.Exif = itemData(r, size, m.iloc, m.exifItem)
	}
	return info, nil
}

// heifTopLevel walks the top-level boxes by their headers and returns
// the first ftyp's major brand and the meta box's body (the last meta
// box, read whole).
func heifTopLevel(r io.ReaderAt, size int64) (brand string, meta []byte, err error) {
	c := newCursor(r, 0, size)
	for c.off < size {
		typ, n, err := boxHeader(c, size-c.off)
		if err != nil {
			return "", nil, err
		}
		switch {
		case typ == "ftyp" && brand == "":
			if brand, err = ftypBrand(c, n); err != nil {
				return "", nil, err
			}
			n -= 4
		case typ == "meta":
			if n > maxHEIFMeta {
				return "", nil, fmt.Errorf("%w: meta box of %d bytes", errHEIF, n)
			}
			meta = make([]byte, n)
			if c.read(meta) != nil {
				return "", nil, errHEIF
			}
			n = 0
		case typ == "ftyp" && n < 4:
			return "", nil, errHEIF
		}
		if c.skip(n) != nil {
			return "", nil, errHEIF
		}
	}
	if brand == "" || len(meta) < 4 {
		return "", nil, errHEIF
	}
	return brand, meta, nil
}

// boxType names the box types the parser reads, "" for any other: a
// constant string, so walking many boxes allocates nothing per box.
func boxType(b []byte) string {
	switch string(b) {
	case "ftyp":
		return "ftyp"
	case "meta":
		return "meta"
	case "pitm":
		return "pitm"
	case "iinf":
		return "iinf"
	case "infe":
		return "infe"
	case "iloc":
		return "iloc"
	case "iprp":
		return "iprp"
	case "ipco":
		return "ipco"
	case "ipma":
		return "ipma"
	case "ispe":
		return "ispe"
	case "irot":
		return "irot"
	case "colr":
		return "colr"
	}
	return ""
}

// boxHeader reads a box header at the cursor (32-bit size and type;
// size 1: a 64-bit size follows; size 0: the box runs to the end) and
// returns the type (boxType) and the body's length, which must fit in the
// left bytes that remain.
func boxHeader(c *cursor, left int64) (typ string, n int64, err error) {
	hdr, err := c.header(8)
	if err != nil {
		return "", 0, errHEIF
	}
	size, hlen := uint64(binary.BigEndian.Uint32(hdr[:4])), uint64(8)
	typ = boxType(hdr[4:8])
	switch size {
	case 0:
		size = uint64(left)
	case 1:
		if hdr, err = c.header(8); err != nil {
			return "", 0, errHEIF
		}
		size, hlen = binary.BigEndian.Uint64(hdr), 16
	}
	if size < hlen || size > uint64(left) {
		return "", 0, errHEIF
	}
	return typ, int64(size - hlen), nil
}

// ftypBrand reads the major brand from an ftyp body of n bytes.
func ftypBrand(c *cursor, n int64) (string, error) {
	if n < 4 {
		return "", errHEIF
	}
	b, err := c.header(4)
	if err != nil {
		return "", errHEIF
	}
	return string(b), nil
}

// eachBox calls fn with the type (boxType) and body of each box in b
// (size 1: a 64-bit size; size 0: to the end), stopping at fn's first
// error; a box that does not fit is errHEIF. It allocates nothing.
func eachBox(b []byte, fn func(typ string, body []byte) error) error {
	for len(b) > 0 {
		if len(b) < 8 {
			return errHEIF
		}
		size, hdr := uint64(binary.BigEndian.Uint32(b)), uint64(8)
		typ := boxType(b[4:8])
		switch size {
		case 0:
			size = uint64(len(b))
		case 1:
			if len(b) < 16 {
				return errHEIF
			}
			size, hdr = binary.BigEndian.Uint64(b[8:]), 16
		}
		if size < hdr || size > uint64(len(b)) {
			return errHEIF
		}
		if err := fn(typ, b[hdr:size]); err != nil {
			return err
		}
		b = b[size:]
	}
	return nil
}

// metaBox is what the meta box's children say.
type metaBox struct {
	primary, exifItem uint32
	iloc              []byte // the iloc body
	ipco              []byte // the ipco body (the properties, in order)
	ipma              []byte // the ipma entries, after its FullBox header
	ipmaVersion       byte
	ipmaFlags         byte
}

// parseMeta reads a meta body (a FullBox: version and flags first) and
// its children pitm, iinf, iloc and iprp; others are ignored.
func parseMeta(meta []byte) (*metaBox, error) {
	m := &metaBox{}
	err := eachBox(meta[4:], func(typ string, body []byte) error {
		var err error
		switch typ {
		case "pitm":
			m.primary, err = parsePitm(body)
		case "iinf":
			m.exifItem, err = exifItemID(body)
		case "iloc":
			m.iloc = body
		case "iprp":
			err = m.parseIprp(body)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if m.primary == 0 || m.ipco == nil || m.ipma == nil {
		return nil, errHEIF
	}
	return m, nil
}

// parsePitm returns the primary item's ID from a pitm body (version 0:
// 16 bits; else 32).
func parsePitm(b []byte) (uint32, error) {
	switch {
	case len(b) < 6:
		return 0, errHEIF
	case b[0] == 0:
		return uint32(binary.BigEndian.Uint16(b[4:])), nil
	case len(b) >= 8:
		return binary.BigEndian.Uint32(b[4:]), nil
	}
	return 0, nil
}

// exifItemID returns the ID of the item of type "Exif" in an iinf box
// body, 0 if none.
func exifItemID(b []byte) (uint32, error) {
	if len(b) < 6 {
		return 0, errHEIF
	}
	skip := 6 // FullBox, u16 entry_count
	if b[0] != 0 {
		skip = 8
	}
	if len(b) < skip {
		return 0, errHEIF
	}
	var id uint32
	err := eachBox(b[skip:], func(typ string, body []byte) error {
		if typ == "infe" && id == 0 {
			if item, kind := parseInfe(body); kind == "Exif" {
				id = item
			}
		}
		return nil
	})
	return id, err
}

// parseInfe returns an infe body's item ID and, if its type is "Exif",
// that type ("" for other types, versions other than 2 and 3, or a body
// too short).
func parseInfe(b []byte) (uint32, string) {
	if len(b) < 4 {
		return 0, ""
	}
	v, body := b[0], b[4:]
	var id uint32
	switch {
	case v == 2 && len(body) >= 8:
		id, body = uint32(binary.BigEndian.Uint16(body)), body[2:]
	case v == 3 && len(body) >= 10:
		id, body = binary.BigEndian.Uint32(body), body[4:]
	default:
		return 0, ""
	}
	if string(body[2:6]) != "Exif" { // after u16 protection index
		return id, ""
	}
	return id, "Exif"
}

// parseIprp reads an iprp body: the ipco box (properties) and the ipma
// box (which items they belong to).
func (m *metaBox) parseIprp(b []byte) error {
	return eachBox(b, func(typ string, body []byte) error {
		switch typ {
		case "ipco":
			m.ipco = body
		case "ipma":
			if len(body) < 4 {
				return errHEIF
			}
			m.ipmaVersion, m.ipmaFlags, m.ipma = body[0], body[3], body[4:]
		}
		return nil
	})
}

// primaryProperties reads the properties associated with the primary
// item (ispe, irot, colr) into info; an index outside ipco, or no
// positive size, is errHEIF.
func (m *metaBox) primaryProperties(info *heifInfo) error {
	assoc, err := associations(m.ipma, m.ipmaVersion, m.ipmaFlags, m.primary)
	if err != nil {
		return err
	}
	for _, want := range assoc {
		i := 0
		found := false
		err := eachBox(m.ipco, func(typ string, body []byte) error {
			i++
			if i != want {
				return nil
			}
			found = true
			return applyProperty(info, typ, body)
		})
		if err != nil {
			return err
		}
		if !found {
			return errHEIF
		}
	}
	if info.Width <= 0 || info.Height <= 0 {
		return errHEIF
	}
	return nil
}

// applyProperty reads one property box of the primary item into info;
// those the pipeline has no use for are ignored.
func applyProperty(info *heifInfo, typ string, b []byte) error {
	switch typ {
	case "ispe":
		return parseIspe(info, b)
	case "irot":
		return parseIrot(info, b)
	case "colr":
		return parseColr(info, b)
	}
	return nil
}

// parseIspe reads the image's stored width and height (FullBox, then
// two u32).
func parseIspe(info *heifInfo, b []byte) error {
	if len(b) < 12 {
		return errHEIF
	}
	info.Width, info.Height = int(binary.BigEndian.Uint32(b[4:])), int(binary.BigEndian.Uint32(b[8:]))
	return nil
}

// parseIrot reads the rotation, in quarter turns anticlockwise (the low
// two bits of its one byte).
func parseIrot(info *heifInfo, b []byte) error {
	if len(b) < 1 {
		return errHEIF
	}
	info.Rotation = int(b[0] & 3)
	return nil
}

// parseColr reads a colour box: an ICC profile ('prof', 'rICC') or nclx
// colour primaries (u16 after the type).
func parseColr(info *heifInfo, b []byte) error {
	if len(b) < 4 {
		return errHEIF
	}
	switch string(b[:4]) {
	case "prof", "rICC":
		info.ICC = b[4:]
		if len(info.ICC) > maxICC {
			info.ICC = nil
		}
	case "nclx":
		if len(b) >= 6 {
			info.Primaries = int(binary.BigEndian.Uint16(b[4:]))
		}
	}
	return nil
}

// associations returns the 1-based ipco indexes associated with item in
// an ipma box body (after its FullBox header).
func associations(b []byte, version, flags byte, item uint32) ([]int, error) {
	if len(b) < 4 {
		return nil, errHEIF
	}
	n := binary.BigEndian.Uint32(b)
	b = b[4:]
	width := 1
	if flags&1 != 0 {
		width = 2
	}
	for range n {
		var id uint32
		if version < 1 {
			if len(b) < 3 {
				return nil, errHEIF
			}
			id, b = uint32(binary.BigEndian.Uint16(b)), b[2:]
		} else {
			if len(b) < 5 {
				return nil, errHEIF
			}
			id, b = binary.BigEndian.Uint32(b), b[4:]
		}
		count := int(b[0])
		b = b[1:]
		if len(b) < count*width {
			return nil, errHEIF
		}
		if id == item {
			out := make([]int, count)
			for i := range out {
				if width == 1 {
					out[i] = int(b[i] & 0x7F)
				} else {
					out[i] = int(binary.BigEndian.Uint16(b[2*i:]) & 0x7FFF)
				}
			}
			return out, nil
		}
		b = b[count*width:]
	}
	return nil, fmt.Errorf("%w: no properties for the primary item", errHEIF)
}
