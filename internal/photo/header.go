package photo

import (
	"image"
	"io"
	"time"
)

// header is what ProcessAt reads of an upload before it decodes it, all
// within MetaBound(format) bytes: the declared size and colour model, the
// ICC profile's gamut, a JPEG's EXIF orientation and capture time and
// frame, a WebP's layout, a HEIC's container facts.
type header struct {
	format      Format
	cfg         image.Config
	gamut       Gamut
	orientation int
	taken       time.Time
	jpeg        jpegInfo
	webp        webpLayout
	heif        *heifInfo
}

// readHeader reads the header of an upload of format f (Sniff's verdict)
// from size bytes of src: for JPEG, PNG and WebP the standard decoders'
// DecodeConfig (which read up to the frame or IHDR, through buffers of
// their own of a few kilobytes) and the format's own metadata walk; for
// HEIC the container's boxes (parseHEIF). It returns ErrDamaged for what
// it cannot read, ErrTooLarge for a size past MaxSide or MaxPixels.
func readHeader(src io.ReaderAt, size int64, f Format) (*header, error) {
	h := &header{format: f}
	if f == HEIC {
		info, err := parseHEIF(src, size)
		if err != nil {
			return nil, ErrDamaged
		}
		h.heif = info
		h.cfg = image.Config{Width: info.Width, Height: info.Height}
		h.gamut = info.gamut()
		if info.Exif != nil {
			_, h.taken = readEXIF(info.Exif)
		}
		info.Exif, info.ICC = nil, nil // read: nothing of them is kept
	} else {
		cfg, err := decoders[f].config(io.NewSectionReader(src, 0, size))
		if err != nil || cfg.Width <= 0 || cfg.Height <= 0 {
			return nil, ErrDamaged
		}
		h.cfg = cfg
	}
	if h.cfg.Width > MaxSide || h.cfg.Height > MaxSide || int64(h.cfg.Width)*int64(h.cfg.Height) > MaxPixels {
		return nil, ErrTooLarge
	}
	switch f {
	case JPEG:
		h.jpeg = jpegMeta(src, size)
		h.gamut = classifyICC(h.jpeg.icc)
		h.orientation, h.taken = h.jpeg.orientation, h.jpeg.taken
		h.jpeg.icc = nil
	case PNG:
		h.gamut = classifyICC(pngICC(src, size))
	case WebP:
		h.webp = webpMeta(src, size)
		h.gamut = classifyICC(h.webp.icc)
		h.webp.icc = nil
	}
	return h, nil
}

// jpegInfo is what one walk over a JPEG's segments up to its first scan
// reads: the frame header, the EXIF of the first APP1 "Exif" segment, the
// ICC profile of the APP2 segments.
type jpegInfo struct {
	frame       jpegFrame
	hasFrame    bool
	orientation int
	taken       time.Time
	icc         []byte
}

// jpegFrame is what the frame header (SOFn) says about a JPEG's memory.
type jpegFrame struct {
	// ycc is bytes per pixel of the decoded image.YCbCr (3 for 4:4:4, 1.5
	// for 4:2:0); samples the samples per pixel over all components.
	ycc, samples float64
	progressive  bool
}

// jpegMeta walks a JPEG's segments once (jpegSegments: one maxSegment
// buffer, the other segments skipped unread) and reads its SOF0–2 frame
// header, EXIF and ICC profile. What it cannot read is left zero.
func jpegMeta(r io.ReaderAt, size int64) jpegInfo {
	var info jpegInfo
	var icc iccParts
	seenEXIF := false
	// Once the profile is over maxICC, its other parts are skipped unread.
	want := func(m byte) bool {
		return (m == 0xE1 && !seenEXIF) || (m == 0xE2 && !icc.broken) || (m >= 0xC0 && m <= 0xC2 && !info.hasFrame)
	}
	jpegSegments(r, size, want, func(m byte, body []byte) bool {
		switch {
		case body == nil: // skipped
		case m == 0xE1 && len(body) >= len(exifHeader) && string(body[:len(exifHeader)]) == exifHeader:
			seenEXIF = true
			info.orientation, info.taken = readEXIF(body[len(exifHeader):])
		case m == 0xE2:
			icc.add(body)
		case m >= 0xC0 && m <= 0xC2:
			info.frame, info.hasFrame = frameOf(m, body)
		}
		return true
	})
	info.icc = icc.profile()
	return info
}

// frameOf reads a SOF0–2 body: Go's decoder sizes the chroma planes from
// the luma component's sampling factors.
func frameOf(m byte, b []byte) (jpegFrame, bool) {
	var fr jpegFrame
	if len(b) < 6 || b[5] == 0 || len(b) < 6+3*int(b[5]) {
		return fr, false
	}
	nc := int(b[5])
	h0, v0 := float64(b[7]>>4), float64(b[7]&0x0F)
	if h0 == 0 || v0 == 0 {
		return fr, false
	}
	fr.progressive = m == 0xC2
	fr.ycc = 1 + 2/(h0*v0)
	fr.samples = 1
	for i := 1; i < nc; i++ {
		h, v := float64(b[7+3*i]>>4), float64(b[7+3*i]&0x0F)
		fr.samples += h * v / (h0 * v0)
	}
	return fr, true
}
