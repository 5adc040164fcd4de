package archive

import (
	"archive/zip"
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"slices"
)

// Central and local header signatures and fixed sizes (APPNOTE 4.3.7,
// 4.3.12) and the zip64 extra field's tag (4.5.3).
const (
	centralSig = 0x02014b50
	localSig   = 0x04034b50
	centralLen = 46
	localLen   = 30
	zip64Extra = 0x0001
	max32      = 0xffffffff
)

// span is where one entry lies, as its central header says: the offset
// of its local header and its compressed size.
type span struct {
	hdr  int64
	size int64
}

// walkDirectory reads the central directory d describes header by
// header, before archive/zip does and as it does (the zip64 extra field
// read as archive/zip reads it): exactly d.entries headers, ending
// exactly at d.end, no name longer than maxName bytes. It returns each
// entry's span in directory order. A directory that ends early, holds
// another record or runs on is refused; ra's errors are returned.
func walkDirectory(ra io.ReaderAt, d directory) ([]span, error) {
	short := refuse("the zip's central directory holds fewer entries than its end record counts (%d), or a header in it is cut short: the file is damaged", d.entries)
	r := bufio.NewReaderSize(io.NewSectionReader(ra, int64(d.offset), d.end-int64(d.offset)), 32<<10)
	spans := make([]span, 0, d.entries)
	var h [centralLen]byte
	var vars []byte
	for range d.entries {
		if _, err := io.ReadFull(r, h[:]); err != nil {
			return nil, readRefusal(err, short)
		}
		if binary.LittleEndian.Uint32(h[:]) != centralSig {
			return nil, short
		}
		n := int(binary.LittleEndian.Uint16(h[28:]))
		m := int(binary.LittleEndian.Uint16(h[30:]))
		k := int(binary.LittleEndian.Uint16(h[32:]))
		if n > maxName {
			return nil, refuse("an entry's name is %d bytes; at most %d are taken", n, maxName)
		}
		vars = slices.Grow(vars[:0], n+m+k)[:n+m+k]
		if _, err := io.ReadFull(r, vars); err != nil {
			return nil, readRefusal(err, short)
		}
		s, ok := spanOf(h[:], vars[n:n+m])
		if !ok {
			return nil, refuse("the entry %q needs zip64 sizes its header does not hold: the zip is damaged", vars[:n])
		}
		spans = append(spans, s)
	}
	if _, err := r.ReadByte(); err == nil {
		return nil, refuse("the zip's central directory holds more than the %d entries its end record counts: the file is damaged", d.entries)
	} else if !errors.Is(err, io.EOF) {
		return nil, err
	}
	return spans, nil
}

// spanOf reads a central header's span: its 32-bit compressed size and
// offset, or those that are 0xffffffff from the first zip64 extra field
// of extra, in the order APPNOTE 4.5.3 gives (the uncompressed size
// first, if it is 0xffffffff too). It reports false where a field needed
// is missing, as archive/zip refuses such a header.
func spanOf(h, extra []byte) (span, bool) {
	needU := binary.LittleEndian.Uint32(h[24:]) == max32
	needC := binary.LittleEndian.Uint32(h[20:]) == max32
	needOff := binary.LittleEndian.Uint32(h[42:]) == max32
	s := span{size: int64(binary.LittleEndian.Uint32(h[20:])), hdr: int64(binary.LittleEndian.Uint32(h[42:]))}
	for len(extra) >= 4 {
		tag, size := binary.LittleEndian.Uint16(extra), int(binary.LittleEndian.Uint16(extra[2:]))
		extra = extra[4:]
		if len(extra) < size {
			break
		}
		field := extra[:size]
		extra = extra[size:]
		if tag != zip64Extra {
			continue
		}
		// Each field needed takes the next 8 bytes; one missing is damage.
		take := func(need *bool) (int64, bool) {
			*need = false
			if len(field) < 8 {
				return 0, false
			}
			v := int64(binary.LittleEndian.Uint64(field))
			field = field[8:]
			return v, true
		}
		var ok bool
		if needU {
			if _, ok = take(&needU); !ok {
				return span{}, false
			}
		}
		if needC {
			if s.size, ok = take(&needC); !ok {
				return span{}, false
			}
		}
		if needOff {
			if s.hdr, ok = take(&needOff); !ok {
				return span{}, false
			}
		}
	}
	return s, !needC && !needOff
}

// readRefusal is refusal for a read that ended with the directory (an
// io.EOF or io.ErrUnexpectedEOF), err itself otherwise (ra's).
func readRefusal(err error, refusal *Refusal) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return refusal
	}
	return err
}

// checkLayout holds the entries of the directory at dirOffset to not
// overlapping, as their central headers place them (files and spans in
// directory order): sorted by local header, each one's header (30 bytes
// and its name) and data end before the next one's header begins, and
// the last one's before the directory. It returns where each entry's
// data must end by, in directory order: the next header or the
// directory. openEntry checks that bound again with the local header's
// true length, once it has read it.
func checkLayout(files []*zip.File, spans []span, dirOffset int64) ([]int64, error) {
	order := make([]int32, len(spans))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(i, j int32) int {
		if spans[i].hdr != spans[j].hdr {
			if spans[i].hdr < spans[j].hdr {
				return -1
			}
			return 1
		}
		return int(i - j)
	})
	room := make([]int64, len(spans))
	for k, i := range order {
		next := dirOffset
		if k+1 < len(order) {
			next = spans[order[k+1]].hdr
		}
		s, f := spans[i], files[i]
		if s.hdr < 0 || s.size < 0 || s.hdr+localLen+int64(len(f.Name))+s.size > next {
			if k+1 < len(order) {
				return nil, refuse("the entries %q and %q overlap (one's header or data lies inside the other's data): a zip bomb, or a damaged zip", f.Name, files[order[k+1]].Name)
			}
			return nil, refuse("the entry %q overlaps the central directory (its data runs past where the directory begins): the zip is damaged", f.Name)
		}
		room[i] = next
	}
	return room, nil
}

// checkedView is the zip as Open gives it to archive/zip: the file's
// bytes up to where its end records begin, then end records of Open's
// making (a zip64 end record, its locator and an end record saying "see
// zip64", which archive/zip always follows) that declare the directory
// walkDirectory checked, and nothing after. Whatever else the file's end
// could be read as, archive/zip reads that directory.
type checkedView struct {
	ra   io.ReaderAt
	end  int64
	tail []byte
}

// newCheckedView returns the view of ra for the directory d.
func newCheckedView(ra io.ReaderAt, d directory) *checkedView {
	size := uint64(d.end) - d.offset
	tail := make([]byte, end64Len+end64LocLen+endLen)
	rec, loc, end := tail[:end64Len], tail[end64Len:end64Len+end64LocLen], tail[end64Len+end64LocLen:]
	binary.LittleEndian.PutUint32(rec, end64Sig)
	binary.LittleEndian.PutUint64(rec[4:], end64Len-12)
	binary.LittleEndian.PutUint16(rec[12:], 45)
	binary.LittleEndian.PutUint16(rec[14:], 45)
	binary.LittleEndian.PutUint64(rec[24:], d.entries)
	binary.LittleEndian.PutUint64(rec[32:], d.entries)
	binary.LittleEndian.PutUint64(rec[40:], size)
	binary.LittleEndian.PutUint64(rec[48:], d.offset)
	binary.LittleEndian.PutUint32(loc, end64LocSig)
	binary.LittleEndian.PutUint64(loc[8:], uint64(d.end))
	binary.LittleEndian.PutUint32(loc[16:], 1)
	binary.LittleEndian.PutUint32(end, endSig)
	binary.LittleEndian.PutUint16(end[8:], 0xffff)
	binary.LittleEndian.PutUint16(end[10:], 0xffff)
	binary.LittleEndian.PutUint32(end[12:], max32)
	binary.LittleEndian.PutUint32(end[16:], max32)
	return &checkedView{ra: ra, end: d.end, tail: tail}
}

// Size is the view's length in bytes.
func (v *checkedView) Size() int64 { return v.end + int64(len(v.tail)) }

// ReadAt reads the view as io.ReaderAt does.
func (v *checkedView) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("archive: negative offset")
	}
	n := 0
	if off < v.end {
		want := int(min(int64(len(p)), v.end-off))
		got, err := v.ra.ReadAt(p[:want], off)
		n = got
		if got < want {
			if err == nil || errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF // ra is longer than the view
			}
			return n, err
		}
	}
	if n == len(p) {
		return n, nil
	}
	t := off + int64(n) - v.end
	if t >= int64(len(v.tail)) {
		return n, io.EOF
	}
	n += copy(p[n:], v.tail[t:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}
