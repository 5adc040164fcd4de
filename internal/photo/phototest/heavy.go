// Package phototest builds, in Go, the uploads that test the photo
// pipeline's bounds: files of every accepted format that are small
// images inside large or many metadata segments, chunks and boxes, or
// followed by padding. A reader that buffers "to the next marker" or a
// whole chunk would hold megabytes for each of them; the pipeline's
// readers must hold at most their stated bounds (photo.MetaBound). Used by
// the photo package's tests and by the upload memory harness (make
// memory); nothing here is used by the server.
package phototest

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
)

// Padding returns n bytes with no 0xFF among them (0, 1, … 254, 0, …):
// no JPEG marker can start in it, so a reader looking for the next
// marker reads all of it.
func Padding(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i % 255)
	}
	return b
}

// PaddedJPEG is jpg (a JPEG without EXIF) followed by n bytes of Padding
// after its EOI, as the issue that found the unbounded EXIF reader sent.
func PaddedJPEG(jpg []byte, n int) []byte {
	return append(append([]byte{}, jpg...), Padding(n)...)
}

// MaxSegment is the largest body a JPEG marker segment can have: its
// 16-bit length counts itself.
const MaxSegment = 0xFFFF - 2

// TIFF is a little-endian TIFF header whose IFD0 holds one entry,
// Orientation (1–8), padded with zeros to n bytes (at least 26).
func TIFF(orientation uint16, n int) []byte {
	b := []byte("II*\x00")
	b = binary.LittleEndian.AppendUint32(b, 8)
	b = binary.LittleEndian.AppendUint16(b, 1) // one entry
	b = binary.LittleEndian.AppendUint16(b, 0x0112)
	b = binary.LittleEndian.AppendUint16(b, 3) // SHORT
	b = binary.LittleEndian.AppendUint32(b, 1)
	b = binary.LittleEndian.AppendUint16(b, orientation)
	b = append(b, 0, 0)
	b = binary.LittleEndian.AppendUint32(b, 0) // no IFD1
	return append(b, make([]byte, max(0, n-len(b)))...)
}

// Segment is a JPEG marker segment: 0xFF, marker, length, body.
func Segment(marker byte, body []byte) []byte {
	b := []byte{0xFF, marker}
	b = binary.BigEndian.AppendUint16(b, uint16(len(body)+2))
	return append(b, body...)
}

// MetadataJPEG is jpg with, right after its SOI, an APP1 EXIF segment of
// the largest size a segment can have (orientation 1, the rest zeros)
// and iccParts APP2 ICC_PROFILE segments of the largest size (1–255; a
// profile of iccParts × 65,519 bytes that is not a real one).
func MetadataJPEG(jpg []byte, iccParts int) []byte {
	out := append([]byte{}, jpg[:2]...)
	out = append(out, Segment(0xE1, append([]byte("Exif\x00\x00"), TIFF(1, MaxSegment-6)...))...)
	for i := 1; i <= iccParts; i++ {
		body := append([]byte("ICC_PROFILE\x00"), byte(i), byte(iccParts))
		body = append(body, Padding(MaxSegment-len(body))...)
		out = append(out, Segment(0xE2, body)...)
	}
	return append(out, jpg[2:]...)
}

// Chunk appends a PNG chunk (length, type, body, CRC) to b.
func Chunk(b []byte, typ string, body []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(body)))
	b = append(b, typ...)
	b = append(b, body...)
	crc := crc32.NewIEEE()
	crc.Write([]byte(typ))
	crc.Write(body)
	return binary.BigEndian.AppendUint32(b, crc.Sum32())
}

// Deflate is data compressed with zlib.
func Deflate(data []byte) []byte {
	var z bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&z, zlib.BestCompression)
	zw.Write(data)
	zw.Close()
	return z.Bytes()
}

// PNGParts sizes the metadata of HeavyPNG, in bytes.
type PNGParts struct {
	// Text is a tEXt chunk's size; ZText a zTXt chunk's (stored, not
	// compressible); ICCInflated what the iCCP chunk's profile inflates to
	// (zeros: a few kilobytes compressed).
	Text, ZText, ICCInflated int
	// IDATs splits the image data over that many IDAT chunks.
	IDATs int
}

// HeavyPNG is a w × h 8-bit RGBA PNG (a gradient) carrying the chunks p
// sizes, all before its image data, with valid CRCs: image/png reads it.
func HeavyPNG(w, h int, p PNGParts) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.SetNRGBA(x, y, color.NRGBA{R: uint8(x), G: uint8(y), B: 0x80, A: 0xFF})
		}
	}
	var buf bytes.Buffer
	png.Encode(&buf, img)
	src := buf.Bytes()
	out := append([]byte{}, src[:8]...)
	var idat []byte
	for off := 8; off+8 <= len(src); {
		n := int(binary.BigEndian.Uint32(src[off:]))
		typ, body := string(src[off+4:off+8]), src[off+8:off+8+n]
		off += 12 + n
		switch typ {
		case "IHDR":
			out = Chunk(out, typ, body)
			if p.ICCInflated > 0 {
				out = Chunk(out, "iCCP", append([]byte("huge\x00\x00"), Deflate(make([]byte, p.ICCInflated))...))
			}
			if p.Text > 0 {
				out = Chunk(out, "tEXt", append([]byte("Comment\x00"), Padding(p.Text)...))
			}
			if p.ZText > 0 {
				out = Chunk(out, "zTXt", append([]byte("Comment\x00\x00"), Padding(p.ZText)...))
			}
		case "IDAT":
			idat = append(idat, body...)
		case "IEND":
			parts := max(1, p.IDATs)
			step := (len(idat) + parts - 1) / parts
			for i := 0; i < len(idat); i += step {
				out = Chunk(out, "IDAT", idat[i:min(len(idat), i+step)])
			}
			out = Chunk(out, "IEND", nil)
		default:
			out = Chunk(out, typ, body)
		}
	}
	return out
}

// riffChunk appends a RIFF chunk (FourCC, little-endian size, body, a pad
// byte to an even size) to b.
func riffChunk(b []byte, fourCC string, body []byte) []byte {
	b = append(b, fourCC...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(body)))
	b = append(b, body...)
	if len(body)%2 == 1 {
		b = append(b, 0)
	}
	return b
}

// HeavyWebP turns webp, a simple lossy WebP (RIFF, WEBP, one "VP8 "
// chunk), into an extended one: VP8X, an ICCP chunk of icc bytes (not a
// real profile), the VP8 chunk with vp8Extra bytes after its frame data
// (read as part of the last partition), then an EXIF chunk of exif bytes
// (a TIFF with orientation 1). x/image/webp decodes it.
func HeavyWebP(webp []byte, icc, exif, vp8Extra int) []byte {
	vp8 := webp[20 : 20+int(binary.LittleEndian.Uint32(webp[16:]))]
	// The key frame's size: 14 bits each, after the 3-byte frame tag and
	// the 3-byte start code.
	w := int(binary.LittleEndian.Uint16(vp8[6:]) & 0x3FFF)
	h := int(binary.LittleEndian.Uint16(vp8[8:]) & 0x3FFF)
	var flags byte
	if icc > 0 {
		flags |= 0x20
	}
	if exif > 0 {
		flags |= 0x08
	}
	x := []byte{flags, 0, 0, 0}
	x = append(x, byte(w-1), byte((w-1)>>8), byte((w-1)>>16))
	x = append(x, byte(h-1), byte((h-1)>>8), byte((h-1)>>16))
	body := riffChunk([]byte("WEBP"), "VP8X", x)
	if icc > 0 {
		body = riffChunk(body, "ICCP", Padding(icc))
	}
	body = riffChunk(body, "VP8 ", append(append([]byte{}, vp8...), make([]byte, vp8Extra)...))
	if exif > 0 {
		body = riffChunk(body, "EXIF", TIFF(1, exif))
	}
	out := append([]byte("RIFF"), binary.LittleEndian.AppendUint32(nil, uint32(len(body)))...)
	return append(out, body...)
}

// Box is an ISOBMFF box with a 32-bit size.
func Box(typ string, body ...[]byte) []byte {
	all := bytes.Join(body, nil)
	b := binary.BigEndian.AppendUint32(nil, uint32(8+len(all)))
	return append(append(b, typ...), all...)
}

// HEIFParts sizes HeavyHEIF.
type HEIFParts struct {
	// FreeBoxes is how many empty top-level "free" boxes come before the
	// meta box; Free the size of one more "free" box after it.
	FreeBoxes, Free int
	// Exif is the size of the Exif item's TIFF data (orientation 1).
	Exif int
	// MetaPadding is the size of a "free" box inside the meta box.
	MetaPadding int
}

// HeavyHEIF is a HEIC container (brand heic) whose primary item 1 is a
// 640 × 480 image (ispe) with no coded data a decoder could read, and
// whose item 2 is an Exif item in the mdat, sized by p. Its boxes are
// right for a parser that follows ISO/IEC 23008-12; a decoder refuses it.
func HeavyHEIF(p HEIFParts) []byte {
	ftyp := Box("ftyp", []byte("heic\x00\x00\x00\x00mif1heic"))
	var top []byte
	for range p.FreeBoxes {
		top = append(top, Box("free")...)
	}
	exif := append([]byte{0, 0, 0, 0}, TIFF(1, p.Exif)...) // offset to the TIFF header: 0
	infe := func(id uint16, typ string) []byte {
		b := []byte{2, 0, 0, 0}
		b = binary.BigEndian.AppendUint16(b, id)
		b = append(b, 0, 0) // protection index
		b = append(b, typ...)
		return Box("infe", append(b, 0)) // empty name
	}
	iinf := Box("iinf", []byte{0, 0, 0, 0, 0, 2}, infe(1, "hvc1"), infe(2, "Exif"))
	pitm := Box("pitm", []byte{0, 0, 0, 0, 0, 1})
	iprp := Box("iprp",
		Box("ipco", Box("ispe", []byte{0, 0, 0, 0, 0, 0, 2, 128, 0, 0, 1, 224})),
		Box("ipma", []byte{0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 1, 0x81}))
	iloc := func(exifAt uint32) []byte {
		b := []byte{0, 0, 0, 0, 0x44, 0x00} // version 0; offset and length 4 bytes, no base
		b = binary.BigEndian.AppendUint16(b, 1)
		b = binary.BigEndian.AppendUint16(b, 2) // item 2
		b = binary.BigEndian.AppendUint16(b, 0) // data reference
		b = binary.BigEndian.AppendUint16(b, 1) // one extent
		b = binary.BigEndian.AppendUint32(b, exifAt)
		b = binary.BigEndian.AppendUint32(b, uint32(len(exif)))
		return Box("iloc", b)
	}
	var pad []byte
	if p.MetaPadding > 0 {
		pad = Box("free", make([]byte, p.MetaPadding))
	}
	meta := func(exifAt uint32) []byte {
		return Box("meta", []byte{0, 0, 0, 0}, Box("hdlr", make([]byte, 25)), pitm, iinf, iloc(exifAt), iprp, pad)
	}
	var free []byte
	if p.Free > 0 {
		free = Box("free", Padding(p.Free))
	}
	head := len(ftyp) + len(top) + len(meta(0)) + len(free) + 8 // the mdat's header
	return bytes.Join([][]byte{ftyp, top, meta(uint32(head)), free, Box("mdat", exif)}, nil)
}
