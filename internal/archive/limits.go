package archive

// Limits bound what Open accepts, so that a hostile zip costs its reader
// no more than these: every field is a ceiling, and a zero field takes
// its default from DefaultLimits. Sizes are bytes, uncompressed unless
// named otherwise.
type Limits struct {
	// MaxEntries is the most entries (files and directories) the central
	// directory may list. Default 100,000: a photo for each of 100,000
	// meals (27 years of ten a day). The zip reader holds about 470 bytes
	// an entry while Open runs, so a zip at the limit is checked, or
	// refused, within 64 MiB of heap (make import-memory), and one past it
	// is refused before its directory is read.
	MaxEntries int
	// MaxDirectoryBytes bounds the central directory itself, which the
	// zip reader holds in memory. Default 64 MiB (about 250 bytes an entry).
	MaxDirectoryBytes int64
	// MaxMeals is the most meals meals.json may hold. Default 200,000
	// (fifty years of ten meals a day).
	MaxMeals int
	// MaxJSONBytes bounds meals.json and manifest.json, each of which
	// Open reads whole. Default 128 MiB.
	MaxJSONBytes int64
	// MaxMealBytes bounds one meal of meals.json as JSON, which Open
	// holds whole while it reads the meal (and any other value of
	// meals.json), refused before it is held. Default 320 KiB: a meal at
	// every limit of the diary (2,000 characters of notes, 20 comments of
	// 2,000 with their labels), each character written as a 6-byte
	// escape, is under 280 KiB.
	MaxMealBytes int64
	// MaxFileBytes bounds any one entry. Default 256 MiB.
	MaxFileBytes int64
	// MaxPhotoBytes bounds a photo a meal names. Default 64 MiB, beyond
	// any display copy ndiro writes (and the 25 MB upload limit).
	MaxPhotoBytes int64
	// MaxTotalBytes bounds the sum of every entry's uncompressed size.
	// Default 64 GiB.
	MaxTotalBytes int64
	// MaxRatio is the most an entry of at least RatioMinBytes may expand
	// by (uncompressed size / compressed size). Default 100: JPEG is
	// stored, JSON and CSV deflate by 5 to 20; a zip bomb expands by
	// hundreds to a thousand.
	MaxRatio int64
	// RatioMinBytes is the uncompressed size from which MaxRatio applies:
	// a small file of repeated text may expand more, and costs nothing.
	// Default 1 MiB.
	RatioMinBytes int64
}

// DefaultLimits are the limits a zero Limits field takes.
var DefaultLimits = Limits{
	MaxEntries:        100_000,
	MaxDirectoryBytes: 64 << 20,
	MaxMeals:          200_000,
	MaxJSONBytes:      128 << 20,
	MaxMealBytes:      320 << 10,
	MaxFileBytes:      256 << 20,
	MaxPhotoBytes:     64 << 20,
	MaxTotalBytes:     64 << 30,
	MaxRatio:          100,
	RatioMinBytes:     1 << 20,
}

// withDefaults returns l with every zero field set from DefaultLimits.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	pick := func(v *int64, def int64) {
		if *v <= 0 {
			*v = def
		}
	}
	if l.MaxEntries <= 0 {
		l.MaxEntries = d.MaxEntries
	}
	if l.MaxMeals <= 0 {
		l.MaxMeals = d.MaxMeals
	}
	pick(&l.MaxDirectoryBytes, d.MaxDirectoryBytes)
	pick(&l.MaxJSONBytes, d.MaxJSONBytes)
	pick(&l.MaxMealBytes, d.MaxMealBytes)
	pick(&l.MaxFileBytes, d.MaxFileBytes)
	pick(&l.MaxPhotoBytes, d.MaxPhotoBytes)
	pick(&l.MaxTotalBytes, d.MaxTotalBytes)
	pick(&l.MaxRatio, d.MaxRatio)
	pick(&l.RatioMinBytes, d.RatioMinBytes)
	return l
}
