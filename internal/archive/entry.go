package archive

import (
	"archive/zip"
	"compress/flate"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash"
	"hash/crc32"
	"io"
)

// openEntry opens entry f for reading, refusing it at once if it declares
// more than max bytes or, its local header read, its data would run into
// the next entry's header or the central directory (f.room). The reader
// (entryReader) decompresses the raw bytes itself, so that the declared
// size, CRC-32 and, if sum is not "", the SHA-256 (hex) are this
// package's checks, not only the zip library's.
func (a *Archive) openEntry(f file, max int64, sum string) (io.ReadCloser, error) {
	if f.UncompressedSize64 > uint64(max) {
		return nil, refuse("%q is %d bytes uncompressed; at most %d are taken", f.Name, f.UncompressedSize64, max)
	}
	if err := a.checkData(f); err != nil {
		return nil, err
	}
	raw, err := f.OpenRaw()
	if err != nil {
		return nil, refuse("%q cannot be read (%v): the zip is damaged", f.Name, err)
	}
	e := &entryReader{name: f.Name, left: int64(f.UncompressedSize64), crc: crc32.NewIEEE(), wantCRC: f.CRC32}
	switch f.Method {
	case zip.Store:
		e.r = raw
	case zip.Deflate:
		fr := flate.NewReader(raw)
		e.r, e.closer = fr, fr
	default:
		return nil, refuse("%q uses compression method %d; only stored and deflated entries are read", f.Name, f.Method)
	}
	if sum != "" {
		e.sha, e.wantSHA = sha256.New(), sum
	}
	return e, nil
}

// checkData reads f's local header and refuses f unless archive/zip
// finds its data where that header, at the offset walkDirectory read,
// puts it, and the data ends by f.room.
func (a *Archive) checkData(f file) error {
	var h [localLen]byte
	if _, err := a.ra.ReadAt(h[:], f.hdr); err != nil {
		return readRefusal(err, refuse("%q cannot be read: its local header lies past the end of the zip", f.Name))
	}
	start := f.hdr + localLen + int64(binary.LittleEndian.Uint16(h[26:])) + int64(binary.LittleEndian.Uint16(h[28:]))
	at, err := f.DataOffset()
	if err != nil && !errors.Is(err, zip.ErrFormat) {
		return readRefusal(err, refuse("%q cannot be read: its local header lies past the end of the zip", f.Name))
	}
	if err != nil || binary.LittleEndian.Uint32(h[:]) != localSig || at != start {
		return refuse("%q cannot be read: its local header is not where the central directory says: the zip is damaged", f.Name)
	}
	if start+int64(f.CompressedSize64) > f.room {
		return refuse("%q overlaps the entry after it (its data runs into that entry's header, or the central directory): a zip bomb, or a damaged zip", f.Name)
	}
	return nil
}

// entryReader reads one entry's uncompressed bytes and fails with a
// *Refusal, and keeps failing, as soon as they go past the declared size
// (the bytes past it are never passed on), or at their end if they fall
// short of it or their checksums differ.
type entryReader struct {
	name    string
	r       io.Reader
	closer  io.Closer
	left    int64 // bytes still declared
	crc     hash.Hash32
	wantCRC uint32
	sha     hash.Hash
	wantSHA string
	err     error
}

func (e *entryReader) Read(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	// One byte past what is declared is enough to know it lies.
	if int64(len(p)) > e.left+1 {
		p = p[:e.left+1]
	}
	n, err := e.r.Read(p)
	if int64(n) > e.left {
		e.err = refuse("%q holds more bytes than the zip declares for it: the zip is damaged or hostile", e.name)
		return 0, e.err
	}
	e.left -= int64(n)
	e.crc.Write(p[:n])
	if e.sha != nil {
		e.sha.Write(p[:n])
	}
	switch {
	case errors.Is(err, io.EOF):
		e.err = e.finish()
		return n, e.err
	case err != nil:
		var corrupt flate.CorruptInputError
		if errors.As(err, &corrupt) || errors.Is(err, io.ErrUnexpectedEOF) {
			err = refuse("%q is damaged: its compressed data does not decode (%v)", e.name, err)
		}
		e.err = err
		return n, err
	}
	return n, nil
}

// finish checks what the entry's end must satisfy: every declared byte
// read, and the checksums equal. It returns io.EOF if so.
func (e *entryReader) finish() error {
	switch {
	case e.left > 0:
		return refuse("%q ends %d bytes short of the size the zip declares for it: the zip is damaged", e.name, e.left)
	case e.crc.Sum32() != e.wantCRC:
		return refuse("%q is damaged: its CRC-32 differs from the zip's", e.name)
	case e.sha != nil && hex.EncodeToString(e.sha.Sum(nil)) != e.wantSHA:
		return refuse("%q is damaged: its SHA-256 differs from manifest.json's", e.name)
	}
	return io.EOF
}

func (e *entryReader) Close() error {
	if e.closer != nil {
		return e.closer.Close()
	}
	return nil
}
