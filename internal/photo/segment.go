package photo

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
)

// Bounds of what the metadata readers hold (DESIGN.md, photos: every
// byte read before decoding is bounded). Each reader walks its format's
// segments, chunks or boxes by their headers, through a cursor (a 4 KiB
// buffer; spans it does not need are skipped by seeking, never read), and
// reads a body only if it needs it and it is within these bounds; what
// they add up to per format is MetaBound, which the pipeline holds
// against its budget while it reads an upload's header.
const (
	// maxSegment is the largest body of a JPEG marker segment (APP1
	// EXIF, APP2 ICC part, SOF): its 16-bit length counts its own two
	// bytes. The format allows no more.
	maxSegment = 0xFFFF - 2
	// maxICC bounds an embedded ICC profile (a JPEG's APP2 parts joined,
	// a PNG's iCCP inflated, a WebP's ICCP chunk, a HEIF colr box). The
	// profiles phones and cameras embed are a few kilobytes; a larger one
	// is a LUT-based printer or camera profile, which classifyICC would
	// not call Display P3 either: it is dropped (GamutSRGB), and the
	// copies are stored untagged as they would be anyway.
	maxICC = 256 << 10
	// maxHEIFMeta bounds a HEIF meta box (item infos, locations and
	// properties: a few kilobytes in a phone's photo, tens for a grid of
	// many tiles); a larger one is refused as damaged.
	maxHEIFMeta = 1 << 20
	// maxHEIFExif bounds a HEIF Exif item; a larger one is not read (the
	// photo counts, without a capture time). A JPEG's EXIF cannot pass
	// maxSegment.
	maxHEIFExif = 256 << 10
	// headerOverhead is what the header readers hold besides the bodies
	// above: the cursor's buffer, the standard decoders' DecodeConfig
	// state (Huffman and quantisation tables, a zlib inflater), the EXIF
	// reader's tag values (at most maxEXIFTag bytes each).
	headerOverhead = 96 << 10
)

// MetaBound returns the most bytes the pipeline's readers hold while they
// read the header of an upload of format f, before any decoding: its
// size, EXIF orientation and capture time, and ICC profile (the bounds
// above). ProcessAt holds this much of its budget while they run.
func MetaBound(f Format) int64 {
	switch f {
	case JPEG:
		// One segment buffer; the ICC parts, then the profile joined.
		return headerOverhead + maxSegment + 2*maxICC
	case PNG, WebP:
		return headerOverhead + maxICC
	case HEIC:
		return headerOverhead + maxHEIFMeta + maxHEIFExif
	}
	return headerOverhead
}

// errShort is the error of a walker that met the end of the data inside
// a header or body it was reading.
var errShort = errors.New("photo: metadata cut short")

// cursor reads forward through size bytes of r with a small buffer; skip
// passes over a span by seeking, without reading it, so a walk over
// headers costs what the headers are, whatever the bodies between them.
type cursor struct {
	sr   *io.SectionReader
	br   *bufio.Reader
	off  int64 // of the next byte read
	size int64
	head [16]byte
}

// header reads the next n bytes (at most 16: a box, chunk or marker
// header) into the cursor's own array, so reading many headers allocates
// nothing; the slice is valid until the next call.
func (c *cursor) header(n int) ([]byte, error) {
	h := c.head[:n]
	if err := c.read(h); err != nil {
		return nil, err
	}
	return h, nil
}

// cursorBuffer is the cursor's buffer size in bytes.
const cursorBuffer = 4 << 10

func newCursor(r io.ReaderAt, off, size int64) *cursor {
	sr := io.NewSectionReader(r, 0, size)
	sr.Seek(off, io.SeekStart)
	return &cursor{sr: sr, br: bufio.NewReaderSize(sr, cursorBuffer), off: off, size: size}
}

// read fills p, or returns errShort (io.EOF at the very end of the data,
// before any byte of p).
func (c *cursor) read(p []byte) error {
	n, err := io.ReadFull(c.br, p)
	c.off += int64(n)
	switch {
	case err == io.EOF:
		return io.EOF
	case err != nil:
		return errShort
	}
	return nil
}

// Read makes the cursor an io.Reader (a zlib stream inside a chunk).
func (c *cursor) Read(p []byte) (int, error) {
	n, err := c.br.Read(p)
	c.off += int64(n)
	return n, err
}

// byte1 reads one byte.
func (c *cursor) byte1() (byte, error) {
	b, err := c.br.ReadByte()
	if err != nil {
		return 0, errShort
	}
	c.off++
	return b, nil
}

// skip passes over n bytes; errShort if fewer are left.
func (c *cursor) skip(n int64) error {
	if n < 0 || n > c.size-c.off {
		return errShort
	}
	if n <= int64(c.br.Buffered()) {
		c.br.Discard(int(n))
		c.off += n
		return nil
	}
	c.off += n
	if _, err := c.sr.Seek(c.off, io.SeekStart); err != nil {
		return errShort
	}
	c.br.Reset(c.sr)
	return nil
}

// jpegSegments calls fn with each marker segment of a JPEG, from its SOI
// to its first scan (SOS) or EOI, or until fn returns false. want says
// which markers' bodies fn needs: those are read into one buffer of
// maxSegment bytes, reused (fn must not keep body); the others are
// skipped unread and fn gets a nil body. Markers must follow one another
// as the format says (fill bytes 0xFF allowed): anything else is
// errNotJPEG, never a search for the next 0xFF.
func jpegSegments(r io.ReaderAt, size int64, want func(marker byte) bool, fn func(marker byte, body []byte) bool) error {
	c := newCursor(r, 0, size)
	if soi, err := c.header(2); err != nil || soi[0] != 0xFF || soi[1] != 0xD8 {
		return errNotJPEG
	}
	var buf []byte
	for {
		m, err := nextMarker(c)
		switch {
		case err != nil:
			return err
		case m == 0xD8 || (m >= 0xD0 && m <= 0xD7) || m == 0x01:
			continue // markers without a body
		case m == 0xDA || m == 0xD9:
			return nil
		}
		n, err := segmentLength(c)
		if err != nil {
			return err
		}
		var body []byte
		if want(m) {
			if buf == nil {
				buf = make([]byte, maxSegment)
			}
			if c.read(buf[:n]) != nil {
				return errShort
			}
			body = buf[:n]
		} else if err := c.skip(int64(n)); err != nil {
			return err
		}
		if !fn(m, body) {
			return nil
		}
	}
}

// nextMarker reads the marker the cursor must be at: 0xFF, any number of
// fill bytes 0xFF, the marker byte.
func nextMarker(c *cursor) (byte, error) {
	h, err := c.header(2)
	if err != nil {
		return 0, errShort
	}
	if h[0] != 0xFF {
		return 0, errNotJPEG
	}
	m := h[1]
	for m == 0xFF {
		if m, err = c.byte1(); err != nil {
			return 0, err
		}
	}
	return m, nil
}

// segmentLength reads a segment's 16-bit length and returns its body's
// (the length counts its own two bytes).
func segmentLength(c *cursor) (int, error) {
	h, err := c.header(2)
	if err != nil {
		return 0, errShort
	}
	n := int(binary.BigEndian.Uint16(h)) - 2
	if n < 0 {
		return 0, errNotJPEG
	}
	return n, nil
}

// fourCC names the PNG chunk and RIFF chunk types the readers look for,
// "" for any other: a constant string, so a walk over many chunks
// allocates nothing per chunk.
func fourCC(b []byte) string {
	switch string(b) {
	case "IHDR":
		return "IHDR"
	case "iCCP":
		return "iCCP"
	case "IDAT":
		return "IDAT"
	case "IEND":
		return "IEND"
	case "VP8X":
		return "VP8X"
	case "ICCP":
		return "ICCP"
	case "ALPH":
		return "ALPH"
	case "VP8 ":
		return "VP8 "
	case "VP8L":
		return "VP8L"
	case "ANIM":
		return "ANIM"
	}
	return ""
}

// pngChunks calls fn with the type (fourCC), body length and a cursor at the body
// of each chunk of a PNG after its signature, until IEND, the end of the
// data, or fn returns false. What fn leaves unread of a body (and the
// CRC after it) is skipped unread.
func pngChunks(r io.ReaderAt, size int64, fn func(typ string, n int64, body *cursor) bool) error {
	c := newCursor(r, 8, size)
	var hdr [8]byte
	for {
		if err := c.read(hdr[:]); err != nil {
			return err
		}
		n := int64(binary.BigEndian.Uint32(hdr[:4]))
		typ := fourCC(hdr[4:8])
		end := c.off + n + 4 // the CRC follows the body
		if n > 1<<31-1 || end > size {
			return errShort
		}
		if typ == "IEND" || !fn(typ, n, c) {
			return nil
		}
		if err := c.skip(end - c.off); err != nil {
			return err
		}
	}
}

// riffChunks calls fn with the FourCC (fourCC), body length and a cursor at the
// body of each chunk inside a RIFF file's top-level form (a WebP's, after
// "RIFF", its size and "WEBP"), until the end of the data or fn returns
// false. Bodies are padded to an even length; what fn leaves unread is
// skipped unread.
func riffChunks(r io.ReaderAt, size int64, fn func(fourCC string, n int64, body *cursor) bool) error {
	c := newCursor(r, 12, size)
	var hdr [8]byte
	for {
		if err := c.read(hdr[:]); err != nil {
			return err
		}
		n := int64(binary.LittleEndian.Uint32(hdr[4:8]))
		end := c.off + n + n%2
		if end > size && c.off+n > size {
			return errShort
		}
		if !fn(fourCC(hdr[:4]), n, c) {
			return nil
		}
		if end >= size {
			return io.EOF
		}
		if err := c.skip(end - c.off); err != nil {
			return err
		}
	}
}
