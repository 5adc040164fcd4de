package archive

import (
	"encoding/binary"
	"errors"
	"io"
)

// Zip record signatures and fixed sizes (PKWARE APPNOTE 6.3.10, 4.3.14-16).
const (
	endSig        = 0x06054b50 // end of central directory record
	end64Sig      = 0x06064b50 // zip64 end of central directory record
	end64LocSig   = 0x07064b50 // zip64 end of central directory locator
	endLen        = 22
	end64LocLen   = 20
	end64Len      = 56
	maxCommentLen = 0xffff
)

// directory is what the end records of a zip say about its central
// directory: the entry count and where the directory is. end is the
// offset of the first end record (the zip64 one if there is one), where
// the directory must stop.
type directory struct {
	entries uint64
	size    uint64
	offset  uint64
	end     int64
}

// readDirectory reads the end records of the size bytes of ra, before
// archive/zip does: zip.NewReader reads central directory headers for as
// long as they parse, whatever count the end record declares, so a zip
// can make it hold far more than it says. Open checks the count and the
// directory's size against its limits, that nothing lies between the
// directory and the end records, and the directory header by header
// (walkDirectory); then it gives zip.NewReader that directory alone
// (checkedView), so the two cannot read different ones.
func readDirectory(ra io.ReaderAt, size int64) (directory, error) {
	if size < endLen {
		return directory{}, refuse("the file is not a zip archive (it is too short to be one)")
	}
	tail := int64(endLen + maxCommentLen)
	if tail > size {
		tail = size
	}
	buf := make([]byte, tail)
	if _, err := ra.ReadAt(buf, size-tail); err != nil && !errors.Is(err, io.EOF) {
		return directory{}, err
	}
	// The end record is the last signature, searched backwards from the
	// last place a whole record fits, as archive/zip searches; its
	// comment must run exactly to the end of the file. A record whose
	// comment falls short (another record, or bytes, after it) is one that
	// readers that search otherwise would pass over for an earlier one.
	at := -1
	for i := len(buf) - endLen; i >= 0; i-- {
		if binary.LittleEndian.Uint32(buf[i:]) == endSig {
			at = i
			break
		}
	}
	if at < 0 {
		return directory{}, refuse("the file is not a zip archive, or its end was cut off (no end of central directory record)")
	}
	switch n := at + endLen + int(binary.LittleEndian.Uint16(buf[at+20:])); {
	case n > len(buf):
		return directory{}, refuse("the file is not a zip archive, or its end was cut off (its end of central directory record's comment is cut short)")
	case n < len(buf):
		return directory{}, refuse("the zip does not end with its end of central directory record (bytes follow it, or it lies inside another record's comment): zip readers could read it as two different archives")
	}
	e := buf[at:]
	d := directory{
		entries: uint64(binary.LittleEndian.Uint16(e[10:])),
		size:    uint64(binary.LittleEndian.Uint32(e[12:])),
		offset:  uint64(binary.LittleEndian.Uint32(e[16:])),
		end:     size - tail + int64(at),
	}
	if binary.LittleEndian.Uint16(e[4:]) != 0 || binary.LittleEndian.Uint16(e[6:]) != 0 || binary.LittleEndian.Uint16(e[8:]) != binary.LittleEndian.Uint16(e[10:]) {
		return directory{}, refuse("the zip is split over several disks; make it one file")
	}
	if d.entries == 0xffff || d.size == 0xffffffff || d.offset == 0xffffffff {
		var err error
		if d, err = readDirectory64(ra, d.end); err != nil {
			return directory{}, err
		}
	}
	if d.offset > uint64(d.end) || d.size != uint64(d.end)-d.offset {
		return directory{}, refuse("the zip's central directory does not end where its end record begins: the file is damaged or has data appended inside it")
	}
	return d, nil
}

// readDirectory64 reads the zip64 locator just before the end record at
// end, and the zip64 end record it points to.
func readDirectory64(ra io.ReaderAt, end int64) (directory, error) {
	damaged := refuse("the zip's zip64 end records are missing or damaged")
	if end < end64LocLen+end64Len {
		return directory{}, damaged
	}
	loc := make([]byte, end64LocLen)
	if _, err := ra.ReadAt(loc, end-end64LocLen); err != nil {
		return directory{}, err
	}
	if binary.LittleEndian.Uint32(loc) != end64LocSig || binary.LittleEndian.Uint32(loc[4:]) != 0 || binary.LittleEndian.Uint32(loc[16:]) > 1 {
		return directory{}, damaged
	}
	off := binary.LittleEndian.Uint64(loc[8:])
	if off > uint64(end-end64LocLen-end64Len) {
		return directory{}, damaged
	}
	rec := make([]byte, end64Len)
	if _, err := ra.ReadAt(rec, int64(off)); err != nil {
		return directory{}, err
	}
	if binary.LittleEndian.Uint32(rec) != end64Sig || binary.LittleEndian.Uint32(rec[16:]) != 0 || binary.LittleEndian.Uint32(rec[20:]) != 0 {
		return directory{}, damaged
	}
	// The record's own size field counts what follows its first 12 bytes;
	// with the locator, it must end exactly at the end record.
	if n := binary.LittleEndian.Uint64(rec[4:]); n > uint64(end) || off+12+n+end64LocLen != uint64(end) {
		return directory{}, damaged
	}
	return directory{
		entries: binary.LittleEndian.Uint64(rec[32:]),
		size:    binary.LittleEndian.Uint64(rec[40:]),
		offset:  binary.LittleEndian.Uint64(rec[48:]),
		end:     int64(off),
	}, nil
}
