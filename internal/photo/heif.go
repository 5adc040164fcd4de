package photo

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

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
	// ICC is the colr box's profile ('prof' or 'rICC'), if any;
	// Primaries its nclx colour_primaries (1: BT.709/sRGB, 12: Display
	// P3), 0 if none.
	ICC       []byte
	Primaries int
	// Exif is the Exif item's TIFF data, nil if none.
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

// maxHEIFMeta bounds the meta box read into memory; real ones are a few
// kilobytes, and the Exif item a few tens.
const maxHEIFMeta = 4 << 20

type box struct {
	typ  string
	body []byte
}

// boxes splits b into ISOBMFF boxes (size 1: 64-bit size; size 0: to the
// end).
func boxes(b []byte) ([]box, error) {
	var out []box
	for len(b) > 0 {
		if len(b) < 8 {
			return nil, errHEIF
		}
		size, hdr := uint64(binary.BigEndian.Uint32(b)), uint64(8)
		typ := string(b[4:8])
		switch size {
		case 0:
			size = uint64(len(b))
		case 1:
			if len(b) < 16 {
				return nil, errHEIF
			}
			size, hdr = binary.BigEndian.Uint64(b[8:]), 16
		}
		if size < hdr || size > uint64(len(b)) {
			return nil, errHEIF
		}
		out = append(out, box{typ, b[hdr:size]})
		b = b[size:]
	}
	return out, nil
}

// parseHEIF reads the ftyp and meta boxes of a HEIF file of size bytes:
// the brand, the primary image's size, rotation and colour, and its Exif
// item. It reads top-level box headers and the meta box only, never the
// coded image data. Any container it cannot follow, whatever its bytes
// (truncated, sizes out of range, 64-bit sizes, boxes repeated), is
// errHEIF; only the first ftyp box counts.
func parseHEIF(r io.ReaderAt, size int64) (*heifInfo, error) {
	info := &heifInfo{}
	var meta []byte
	var hdr [16]byte
	for off := int64(0); off < size; {
		clear(hdr[:]) // nothing of the previous box's header survives
		n, _ := r.ReadAt(hdr[:], off)
		if n < 8 {
			return nil, errHEIF
		}
		bsize, hlen := int64(binary.BigEndian.Uint32(hdr[:4])), int64(8)
		typ := string(hdr[4:8])
		switch bsize {
		case 0:
			bsize = size - off
		case 1:
			if n < 16 {
				return nil, errHEIF
			}
			bsize, hlen = int64(binary.BigEndian.Uint64(hdr[8:])), 16
		}
		if bsize < hlen || bsize > size-off {
			return nil, errHEIF
		}
		switch typ {
		case "ftyp":
			if bsize < hlen+4 {
				return nil, errHEIF
			}
			if info.Brand != "" {
				break
			}
			var brand [4]byte
			if n, _ := r.ReadAt(brand[:], off+hlen); n < len(brand) {
				return nil, errHEIF
			}
			info.Brand = string(brand[:])
		case "meta":
			if bsize-hlen > maxHEIFMeta {
				return nil, errHEIF
			}
			meta = make([]byte, bsize-hlen)
			if n, _ := r.ReadAt(meta, off+hlen); n < len(meta) {
				return nil, errHEIF
			}
		}
		off += bsize
	}
	if info.Brand == "" || len(meta) < 4 {
		return nil, errHEIF
	}
	children, err := boxes(meta[4:]) // meta is a FullBox
	if err != nil {
		return nil, err
	}
	var primary uint32
	var exifItem uint32
	var iloc, ipco, ipma []byte
	var ipmaFlags byte
	var ipmaVersion byte
	for _, c := range children {
		switch c.typ {
		case "pitm":
			if len(c.body) < 6 {
				return nil, errHEIF
			}
			if c.body[0] == 0 {
				primary = uint32(binary.BigEndian.Uint16(c.body[4:]))
			} else if len(c.body) >= 8 {
				primary = binary.BigEndian.Uint32(c.body[4:])
			}
		case "iinf":
			if exifItem, err = exifItemID(c.body); err != nil {
				return nil, err
			}
		case "iloc":
			iloc = c.body
		case "iprp":
			props, err := boxes(c.body)
			if err != nil {
				return nil, err
			}
			for _, p := range props {
				switch p.typ {
				case "ipco":
					ipco = p.body
				case "ipma":
					if len(p.body) < 4 {
						return nil, errHEIF
					}
					ipmaVersion, ipmaFlags, ipma = p.body[0], p.body[3], p.body[4:]
				}
			}
		}
	}
	if primary == 0 || ipco == nil || ipma == nil {
		return nil, errHEIF
	}
	props, err := boxes(ipco)
	if err != nil {
		return nil, err
	}
	assoc, err := associations(ipma, ipmaVersion, ipmaFlags, primary)
	if err != nil {
		return nil, err
	}
	for _, i := range assoc {
		if i < 1 || i > len(props) {
			return nil, errHEIF
		}
		p := props[i-1]
		switch p.typ {
		case "ispe":
			if len(p.body) < 12 {
				return nil, errHEIF
			}
			info.Width, info.Height = int(binary.BigEndian.Uint32(p.body[4:])), int(binary.BigEndian.Uint32(p.body[8:]))
		case "irot":
			if len(p.body) < 1 {
				return nil, errHEIF
			}
			info.Rotation = int(p.body[0] & 3)
		case "colr":
			if len(p.body) < 4 {
				return nil, errHEIF
			}
			switch string(p.body[:4]) {
			case "prof", "rICC":
				info.ICC = p.body[4:]
			case "nclx":
				if len(p.body) >= 6 {
					info.Primaries = int(binary.BigEndian.Uint16(p.body[4:]))
				}
			}
		}
	}
	if info.Width <= 0 || info.Height <= 0 {
		return nil, errHEIF
	}
	if exifItem != 0 && iloc != nil {
		info.Exif = itemData(r, size, iloc, exifItem)
	}
	return info, nil
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
	entries, err := boxes(b[skip:])
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		if e.typ != "infe" || len(e.body) < 4 {
			continue
		}
		v, body := e.body[0], e.body[4:]
		var id uint32
		switch {
		case v == 2 && len(body) >= 8:
			id, body = uint32(binary.BigEndian.Uint16(body)), body[2:]
		case v == 3 && len(body) >= 10:
			id, body = binary.BigEndian.Uint32(body), body[4:]
		default:
			continue
		}
		if string(body[2:6]) == "Exif" { // after u16 protection index
			return id, nil
		}
	}
	return 0, nil
}

// associations returns the 1-based ipco indexes associated with item in
// an ipma box body (after its FullBox header).
func associations(b []byte, version, flags byte, item uint32) ([]int, error) {
	if len(b) < 4 {
		return nil, errHEIF
	}
	n := binary.BigEndian.Uint32(b)
	b = b[4:]
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
		width := 1
		if flags&1 != 0 {
			width = 2
		}
		if len(b) < count*width {
			return nil, errHEIF
		}
		var out []int
		for i := range count {
			if width == 1 {
				out = append(out, int(b[i]&0x7F))
			} else {
				out = append(out, int(binary.BigEndian.Uint16(b[2*i:])&0x7FFF))
			}
		}
		b = b[count*width:]
		if id == item {
			return out, nil
		}
	}
	return nil, fmt.Errorf("%w: no properties for the primary item", errHEIF)
}

// itemData reads item's extents as located by an iloc box body (file
// offsets only, construction method 0), or nil.
func itemData(r io.ReaderAt, size int64, b []byte, item uint32) []byte {
	if len(b) < 8 {
		return nil
	}
	v := b[0]
	offSize, lenSize := int(b[4]>>4), int(b[4]&0xF)
	baseSize, idxSize := int(b[5]>>4), 0
	if v == 1 || v == 2 {
		idxSize = int(b[5] & 0xF)
	}
	b = b[6:]
	readUint := func(n int) (uint64, bool) {
		if len(b) < n {
			return 0, false
		}
		var x uint64
		for i := range n {
			x = x<<8 | uint64(b[i])
		}
		b = b[n:]
		return x, true
	}
	idSize := 2
	if v == 2 {
		idSize = 4
	}
	count, ok := readUint(idSize)
	if !ok {
		return nil
	}
	for range count {
		id, ok1 := readUint(idSize)
		method := uint64(0)
		if v == 1 || v == 2 {
			m, _ := readUint(2)
			method = m & 0xF
		}
		_, ok2 := readUint(2) // data_reference_index
		base, ok3 := readUint(baseSize)
		extents, ok4 := readUint(2)
		if !ok1 || !ok2 || !ok3 || !ok4 {
			return nil
		}
		var data []byte
		for range extents {
			if idxSize > 0 {
				readUint(idxSize)
			}
			off, ok1 := readUint(offSize)
			ln, ok2 := readUint(lenSize)
			if !ok1 || !ok2 {
				return nil
			}
			if uint32(id) != item {
				continue
			}
			start := int64(base + off)
			if method != 0 || ln > maxHEIFMeta || start < 0 || start+int64(ln) > size || len(data)+int(ln) > maxHEIFMeta {
				return nil
			}
			part := make([]byte, ln)
			if _, err := r.ReadAt(part, start); err != nil {
				return nil
			}
			data = append(data, part...)
		}
		if uint32(id) == item {
			// ISO/IEC 23008-12 A.2.1: a 4-byte offset to the TIFF header.
			if len(data) < 4 {
				return nil
			}
			skip := 4 + int(binary.BigEndian.Uint32(data))
			if skip > len(data) {
				return nil
			}
			return data[skip:]
		}
	}
	return nil
}
