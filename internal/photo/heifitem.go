package photo

import (
	"encoding/binary"
	"io"
)

// fields reads big-endian unsigned integers of 0–8 bytes off the front
// of b, as the iloc box packs them; once one does not fit, ok is false
// and every later read returns 0.
type fields struct {
	b  []byte
	ok bool
}

func (f *fields) uint(n int) uint64 {
	if !f.ok || len(f.b) < n {
		f.ok = false
		return 0
	}
	var x uint64
	for _, c := range f.b[:n] {
		x = x<<8 | uint64(c)
	}
	f.b = f.b[n:]
	return x
}

// ilocLayout is an iloc box's version and field sizes, in bytes
// (ISO/IEC 14496-12, 8.11.3).
type ilocLayout struct {
	version                            byte
	offSize, lenSize, baseSize, idSize int
	idxSize                            int // versions 1 and 2 only
}

// parseIlocHeader reads an iloc body's FullBox header and field sizes,
// and returns the fields from its item count on.
func parseIlocHeader(b []byte) (ilocLayout, *fields, bool) {
	if len(b) < 8 {
		return ilocLayout{}, nil, false
	}
	l := ilocLayout{version: b[0], offSize: int(b[4] >> 4), lenSize: int(b[4] & 0xF), baseSize: int(b[5] >> 4), idSize: 2}
	if l.version == 1 || l.version == 2 {
		l.idxSize = int(b[5] & 0xF)
	}
	if l.version == 2 {
		l.idSize = 4
	}
	return l, &fields{b: b[6:], ok: true}, true
}

// itemEntry is one item of an iloc box: its ID, how its data is stored
// (0: at file offsets), the base offset, and its extents, still packed
// (count of them, from ext).
type itemEntry struct {
	id      uint32
	method  uint64
	base    uint64
	extents uint64
	ext     fields
}

// item reads one item entry and steps f past it (its extents too).
func (l ilocLayout) item(f *fields) itemEntry {
	e := itemEntry{id: uint32(f.uint(l.idSize))}
	if l.version == 1 || l.version == 2 {
		e.method = f.uint(2) & 0xF
	}
	f.uint(2) // data_reference_index
	e.base = f.uint(l.baseSize)
	e.extents = f.uint(2)
	e.ext = *f
	for range e.extents {
		l.extent(f)
	}
	return e
}

// extent reads one extent: its offset from the item's base and length.
func (l ilocLayout) extent(f *fields) (off, n uint64) {
	f.uint(l.idxSize)
	return f.uint(l.offSize), f.uint(l.lenSize)
}

// itemData reads item's data as located by an iloc box body (file
// offsets only, construction method 0), at most maxHEIFExif bytes, or
// nil: the Exif item's TIFF data (ISO/IEC 23008-12 A.2.1: after a 4-byte
// offset to the TIFF header).
func itemData(r io.ReaderAt, size int64, b []byte, item uint32) []byte {
	l, f, ok := parseIlocHeader(b)
	if !ok {
		return nil
	}
	count := f.uint(l.idSize)
	for range count {
		e := l.item(f)
		if !f.ok {
			return nil
		}
		if e.id == item {
			return l.readItem(r, size, e)
		}
	}
	return nil
}

// readItem reads an item's extents, in order, into one buffer: their
// total is checked against maxHEIFExif and the file before anything is
// allocated.
func (l ilocLayout) readItem(r io.ReaderAt, size int64, e itemEntry) []byte {
	if e.method != 0 {
		return nil
	}
	total := uint64(0)
	f := e.ext
	for range e.extents {
		off, n := l.extent(&f)
		start := e.base + off
		if start < e.base || start > uint64(size) || n > uint64(size)-start {
			return nil
		}
		total += n
		if total > maxHEIFExif {
			return nil
		}
	}
	data := make([]byte, total)
	f, at := e.ext, 0
	for range e.extents {
		off, n := l.extent(&f)
		if _, err := r.ReadAt(data[at:at+int(n)], int64(e.base+off)); err != nil && err != io.EOF {
			return nil
		}
		at += int(n)
	}
	if len(data) < 4 {
		return nil
	}
	skip := 4 + uint64(binary.BigEndian.Uint32(data))
	if skip > uint64(len(data)) {
		return nil
	}
	return data[skip:]
}
