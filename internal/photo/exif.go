package photo

import (
	"bytes"
	"strings"
	"time"

	"github.com/bep/imagemeta"
)

// EXIF reading: the pipeline finds the EXIF data itself, within the
// bounds of its format (a JPEG's first APP1 "Exif" segment, at most
// maxSegment bytes; a HEIF's Exif item, at most maxHEIFExif), and hands
// only those bytes, as TIFF, to github.com/bep/imagemeta, asking for the
// few tags it uses. So the reader never sees the rest of the file, and
// what it holds is bounded by the segment and maxEXIFTag.

// exifHeader starts the body of a JPEG APP1 segment that holds EXIF.
const exifHeader = "Exif\x00\x00"

// maxEXIFTag bounds a tag value the EXIF reader reads (a date is 20
// bytes); larger values are skipped unread. maxEXIFTags bounds the tags
// it looks at (a phone's EXIF has a hundred or so): past it the rest is
// ignored.
const (
	maxEXIFTag  = 64
	maxEXIFTags = 2000
)

// exifTimeTags are the tags the pipeline reads, by imagemeta's names (those of
// exiftool), in the order the capture time is taken from: the moment the
// shutter was pressed, when it was digitised, when the file was last
// written.
var exifTimeTags = []string{"DateTimeOriginal", "CreateDate", "ModifyDate"}

// readEXIF returns the orientation (1–8; 0 if none) and the capture time
// (the camera's wall clock as UTC; zero if none or before 1990) from tiff,
// EXIF data as TIFF (byte order mark first). Orientation is IFD0's (the
// main image's, never the thumbnail's). Damaged EXIF is ignored: the
// pixels still count.
func readEXIF(tiff []byte) (orientation int, taken time.Time) {
	if len(tiff) < 8 {
		return 0, time.Time{}
	}
	wanted := func(ti imagemeta.TagInfo) bool {
		switch ti.Tag {
		case "Orientation":
			return ti.Namespace == "IFD0"
		case "DateTimeOriginal", "CreateDate", "ModifyDate":
			// The Exif sub-IFD, as imagemeta names it, or IFD0.
			return ti.Namespace == "IFD0" || ti.Namespace == "IFD0/ExifIFDP"
		}
		return false
	}
	times := map[string]string{}
	_, err := imagemeta.Decode(imagemeta.Options{
		R:               bytes.NewReader(tiff),
		ImageFormat:     imagemeta.TIFF,
		Sources:         imagemeta.EXIF,
		LimitTagSize:    maxEXIFTag,
		LimitNumTags:    maxEXIFTags,
		ShouldHandleTag: wanted,
		HandleTag: func(ti imagemeta.TagInfo) error {
			if ti.Tag == "Orientation" {
				if v, ok := exifInt(ti.Value); ok && v >= 1 && v <= 8 {
					orientation = v
				}
				return nil
			}
			if s, ok := ti.Value.(string); ok {
				times[ti.Tag] = s
			}
			return nil
		},
	})
	if err != nil {
		return 0, time.Time{}
	}
	for _, tag := range exifTimeTags {
		s, ok := times[tag]
		if !ok {
			continue
		}
		t, err := time.Parse("2006:01:02 15:04:05", strings.TrimRight(strings.TrimSpace(s), "\x00"))
		if err == nil && t.Year() >= 1990 {
			return orientation, t
		}
	}
	return orientation, time.Time{}
}

// exifInt is an integer tag value as imagemeta gives it.
func exifInt(v any) (int, bool) {
	switch v := v.(type) {
	case uint16:
		return int(v), true
	case uint32:
		return int(v), true
	case int:
		return v, true
	case uint8:
		return int(v), true
	}
	return 0, false
}
