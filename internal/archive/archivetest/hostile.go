// Package archivetest builds, byte by byte, the zips that test the
// import's zip reader where two zip readers could read one file two ways:
// a file with two end of central directory records, and entries that
// overlap. Each holds a sound meals.json of one meal, so that only the
// zip's structure is wrong. Used by internal/archive's tests and by the
// import memory harnesses (make import-memory); nothing here is used by
// the server.
package archivetest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// Meals is the meals.json of every zip built here: one lunch, format 1.
const Meals = `{"email":"a@example.com","meals":[{"date":"2026-09-01","time":"12:30:00","kind":"lunch"}]}`

// Zip record signatures (PKWARE APPNOTE 4.3.7, 4.3.12, 4.3.14-16).
const (
	localSig    = 0x04034b50
	centralSig  = 0x02014b50
	endSig      = 0x06054b50
	end64Sig    = 0x06064b50
	end64LocSig = 0x07064b50
)

// Entry is one central directory entry: its name, the offset of its local
// header, its sizes and CRC-32, stored (method 0).
type Entry struct {
	Name         string
	Offset       int64
	Size         uint32
	CRC          uint32
	Extra        []byte
	Comment      []byte
	Uncompressed uint32
}

// Local returns the local header of a stored entry name of data, with
// extra in it, followed by data.
func Local(name string, data, extra []byte) []byte {
	h := make([]byte, 30, 30+len(name)+len(extra)+len(data))
	binary.LittleEndian.PutUint32(h, localSig)
	binary.LittleEndian.PutUint16(h[4:], 20)
	binary.LittleEndian.PutUint32(h[14:], crc32.ChecksumIEEE(data))
	binary.LittleEndian.PutUint32(h[18:], uint32(len(data)))
	binary.LittleEndian.PutUint32(h[22:], uint32(len(data)))
	binary.LittleEndian.PutUint16(h[26:], uint16(len(name)))
	binary.LittleEndian.PutUint16(h[28:], uint16(len(extra)))
	h = append(h, name...)
	h = append(h, extra...)
	return append(h, data...)
}

// Central returns e's central directory header. An Uncompressed of 0
// takes Size.
func Central(e Entry) []byte {
	h := make([]byte, 46, 46+len(e.Name)+len(e.Extra)+len(e.Comment))
	binary.LittleEndian.PutUint32(h, centralSig)
	binary.LittleEndian.PutUint16(h[4:], 20)
	binary.LittleEndian.PutUint16(h[6:], 20)
	binary.LittleEndian.PutUint32(h[16:], e.CRC)
	binary.LittleEndian.PutUint32(h[20:], e.Size)
	u := e.Uncompressed
	if u == 0 {
		u = e.Size
	}
	binary.LittleEndian.PutUint32(h[24:], u)
	binary.LittleEndian.PutUint16(h[28:], uint16(len(e.Name)))
	binary.LittleEndian.PutUint16(h[30:], uint16(len(e.Extra)))
	binary.LittleEndian.PutUint16(h[32:], uint16(len(e.Comment)))
	binary.LittleEndian.PutUint32(h[42:], uint32(e.Offset))
	h = append(h, e.Name...)
	h = append(h, e.Extra...)
	return append(h, e.Comment...)
}

// End returns an end of central directory record for entries entries
// (written modulo 65536, as a zip32 record holds them) in a directory of
// size bytes at offset, with a comment of commentLen bytes declared (the
// comment's bytes are the caller's to append).
func End(entries int, size, offset int64, commentLen int) []byte {
	e := make([]byte, 22)
	binary.LittleEndian.PutUint32(e, endSig)
	binary.LittleEndian.PutUint16(e[8:], uint16(entries))
	binary.LittleEndian.PutUint16(e[10:], uint16(entries))
	binary.LittleEndian.PutUint32(e[12:], uint32(size))
	binary.LittleEndian.PutUint32(e[16:], uint32(offset))
	binary.LittleEndian.PutUint16(e[20:], uint16(commentLen))
	return e
}

// End64 returns the zip64 end record of entries entries in a directory
// of size bytes at offset, written at at, its locator, and an end record
// whose fields say "see zip64".
func End64(entries int, size, offset, at int64) []byte {
	rec := make([]byte, 56)
	binary.LittleEndian.PutUint32(rec, end64Sig)
	binary.LittleEndian.PutUint64(rec[4:], 44)
	binary.LittleEndian.PutUint16(rec[12:], 45)
	binary.LittleEndian.PutUint16(rec[14:], 45)
	binary.LittleEndian.PutUint64(rec[24:], uint64(entries))
	binary.LittleEndian.PutUint64(rec[32:], uint64(entries))
	binary.LittleEndian.PutUint64(rec[40:], uint64(size))
	binary.LittleEndian.PutUint64(rec[48:], uint64(offset))
	loc := make([]byte, 20)
	binary.LittleEndian.PutUint32(loc, end64LocSig)
	binary.LittleEndian.PutUint64(loc[8:], uint64(at))
	binary.LittleEndian.PutUint32(loc[16:], 1)
	end := End(0xffff, 0xffffffff, 0xffffffff, 0)
	return append(append(rec, loc...), end...)
}

// TwoEnds returns a zip with two end records. The first closes a sound
// zip of meals.json and hidden.bin, and its comment runs to the end of
// the file; inside that comment, a second end record, followed by one
// byte, points at a central directory of n entries more hidden in
// hidden.bin's data (each about 60 bytes). A reader that takes the end
// record whose comment reaches the end of the file reads a directory of
// 2 entries; archive/zip takes the last record whose comment fits, and
// reads n + 2 (n + 2 is what the second record declares, modulo 65536).
func TwoEnds(n int) []byte {
	var hidden bytes.Buffer
	for i := range n {
		hidden.Write(Central(Entry{Name: fmt.Sprintf("photos/%07d.jpg", i)}))
	}
	var b bytes.Buffer
	b.Write(Local("meals.json", []byte(Meals), nil))
	hiddenAt := int64(b.Len())
	b.Write(Local("hidden.bin", hidden.Bytes(), nil))
	dirAt := int64(b.Len())
	b.Write(Central(Entry{Name: "meals.json", Size: uint32(len(Meals)), CRC: crc32.ChecksumIEEE([]byte(Meals))}))
	b.Write(Central(Entry{Name: "hidden.bin", Offset: hiddenAt, Size: uint32(hidden.Len()), CRC: crc32.ChecksumIEEE(hidden.Bytes())}))
	endAt := int64(b.Len())
	b.Write(End(2, endAt-dirAt, dirAt, 22+1))
	// The hidden directory starts after hidden.bin's local header and
	// name, and runs on through the real one to the first end record.
	from := hiddenAt + 30 + int64(len("hidden.bin"))
	second := int64(b.Len())
	b.Write(End(n+2, second-from, from, 0))
	b.WriteByte(0)
	return b.Bytes()
}

// Overlapping returns a zip of meals.json and n photo entries
// photos/0000000.jpg, … whose central headers all point at one local
// header and its 16 bytes of data: every photo's header lies inside the
// others' data. Their compressed sizes add up to 16 n bytes, less than
// the central directory alone. From 65,535 entries on it ends in zip64
// end records.
func Overlapping(n int) []byte {
	kernel := []byte("0123456789abcdef")
	var b bytes.Buffer
	b.Write(Local("meals.json", []byte(Meals), nil))
	shared := int64(b.Len())
	b.Write(Local("photos/0000000.jpg", kernel, nil))
	dirAt := int64(b.Len())
	b.Write(Central(Entry{Name: "meals.json", Size: uint32(len(Meals)), CRC: crc32.ChecksumIEEE([]byte(Meals))}))
	for i := range n {
		b.Write(Central(Entry{Name: fmt.Sprintf("photos/%07d.jpg", i), Offset: shared, Size: uint32(len(kernel)), CRC: crc32.ChecksumIEEE(kernel)}))
	}
	endAt := int64(b.Len())
	if n+1 >= 0xffff {
		b.Write(End64(n+1, endAt-dirAt, dirAt, endAt))
	} else {
		b.Write(End(n+1, endAt-dirAt, dirAt, 0))
	}
	return b.Bytes()
}
