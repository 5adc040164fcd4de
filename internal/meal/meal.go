package meal

import (
	"time"

	"ndiro/internal/photo"
)

// Kind is what sort of meal it was.
type Kind string

// The kinds of meal, in the order the form offers them.
const (
	Breakfast Kind = "breakfast"
	Lunch     Kind = "lunch"
	Dinner    Kind = "dinner"
	Snack     Kind = "snack"
	Drink     Kind = "drink"
)

// Kinds lists every Kind in form order.
var Kinds = []Kind{Breakfast, Lunch, Dinner, Snack, Drink}

func validKind(k Kind) bool {
	for _, v := range Kinds {
		if v == k {
			return true
		}
	}
	return false
}

// KindAt guesses the kind of a meal eaten at t, to preselect in the form.
func KindAt(t TimeOfDay) Kind {
	switch h := t.Hour(); {
	case h >= 5 && h < 11:
		return Breakfast
	case h >= 11 && h < 15:
		return Lunch
	case h >= 17 && h < 22:
		return Dinner
	}
	return Snack
}

// MaxNotes is the longest note, in characters (runes).
const MaxNotes = 2000

// Meal is one meals row. UserID and SK are the partition and sort keys;
// Date, Time and ID repeat what the sort key holds so that pages and exports
// need not parse it.
type Meal struct {
	UserID string `dynamodbav:"user_id" json:"-"`
	SK     string `dynamodbav:"sk" json:"-"`
	// ID is "HHMMSS-xxxxxx", the part of SK after '#'.
	ID string `dynamodbav:"meal_id" json:"id"`
	// Date is "YYYY-MM-DD" and Time "HH:MM:SS", both as the client gave them.
	Date  string `dynamodbav:"date" json:"date"`
	Time  string `dynamodbav:"time" json:"time"`
	Kind  Kind   `dynamodbav:"kind" json:"kind"`
	Notes string `dynamodbav:"notes,omitempty" json:"notes"`
	// Optional numbers: nil is blank (absent), never 0.
	Kcal     *Number `dynamodbav:"kcal,omitempty" json:"kcal,omitempty"`
	ProteinG *Number `dynamodbav:"protein_g,omitempty" json:"protein_g,omitempty"`
	CarbsG   *Number `dynamodbav:"carbs_g,omitempty" json:"carbs_g,omitempty"`
	FatG     *Number `dynamodbav:"fat_g,omitempty" json:"fat_g,omitempty"`
	// Hunger before and fullness after, 1 (least) to 5 (most); nil is blank.
	Hunger   *int `dynamodbav:"hunger,omitempty" json:"hunger,omitempty"`
	Fullness *int `dynamodbav:"fullness,omitempty" json:"fullness,omitempty"`
	// Photo is the meal's photo, its attributes top-level in the item.
	Photo
	CreatedAt time.Time `dynamodbav:"created_at" json:"created_at"`
	UpdatedAt time.Time `dynamodbav:"updated_at" json:"updated_at"`
	// Version counts writes, from 1; Update is conditional on it.
	Version int64 `dynamodbav:"version" json:"-"`
	// Comments are what share recipients wrote about the meal, by comment
	// ID (the map attribute comments; at most MaxLinkComments of each
	// link, MaxComments in all). They are
	// written by AddComment and DeleteComment only; every other write
	// carries them over as they are (Update merges newer ones in).
	Comments map[string]Comment `dynamodbav:"comments,omitempty" json:"-"`
	// CommentRev counts the writes of Comments (comment_rev; 0 or absent
	// before the first). Update and DeleteVersion are conditional on it as
	// on Version, so no write made from an older read can drop a comment.
	CommentRev int64 `dynamodbav:"comment_rev,omitempty" json:"-"`
	// ImportID names the import of an export zip that claimed the row
	// (import_id; user.Import.ID), "" for a meal saved any other way: a
	// resumed import finds its own claims by it, and never takes another
	// row for one (package account, import).
	ImportID string `dynamodbav:"import_id,omitempty" json:"-"`
}

// Photo is a meal's photo as its row records it: the version of the
// copies' bytes, their pixel sizes and the capture time, set together by
// newPhoto and cleared together by assigning the zero Photo, which is no
// photo. Embedded in Meal, its fields are promoted (m.PhotoV) and stored
// as top-level attributes of the meals item (photo_v, photo_w, photo_h,
// thumb_w, thumb_h, photo_taken), the names they had as Meal's own
// fields: rows written before and after read the same. They keep their
// "Photo"/"Thumb" prefixes for that reason.
//
// Templates of list pages must not reach these fields through Meal: a
// promoted field costs reflection allocations on every use (gridMeal).
type Photo struct {
	// PhotoV is photo_v, when the photo's bytes last changed; 0 is no photo.
	// It changes only when the bytes do, so a notes edit keeps every URL.
	PhotoV photo.Version `dynamodbav:"photo_v,omitempty" json:"-"`
	// Pixel sizes of the display copy and the thumbnail, as displayed.
	PhotoW int `dynamodbav:"photo_w,omitempty" json:"-"`
	PhotoH int `dynamodbav:"photo_h,omitempty" json:"-"`
	ThumbW int `dynamodbav:"thumb_w,omitempty" json:"-"`
	ThumbH int `dynamodbav:"thumb_h,omitempty" json:"-"`
	// PhotoTaken is the photo's EXIF capture time, camera wall clock
	// "2006-01-02T15:04:05"; "" if unknown. It tells where the owner was
	// when, so it is the owner's alone: share recipients never get it
	// (share.redact).
	PhotoTaken string `dynamodbav:"photo_taken,omitempty" json:"photo_taken,omitempty"`
	// PhotoSet is which copies of the photo are stored (photo_set; absent
	// or 0: photo.LegacySet, the display copy and the thumbnail an upload
	// stores). The variant job adds the sized copies and records them
	// here (Store.RecordSet); PhotoKeys lists the objects from it.
	PhotoSet photo.Set `dynamodbav:"photo_set,omitempty" json:"-"`
	// PhotoBytes is the bytes of the copies PhotoSet holds, together
	// (photo_bytes; 0 on rows written before it was kept): what deleting
	// or replacing the photo takes off its owner's user.Usage.
	PhotoBytes int64 `dynamodbav:"photo_bytes,omitempty" json:"-"`
}

// takenLayout is how PhotoTaken writes a camera wall-clock time.
const takenLayout = "2006-01-02T15:04:05"

// newPhoto is the one place a Photo is made: version v, a display copy of
// w×h and a thumbnail of tw×th pixels, of size bytes together, taken at
// the camera wall-clock time taken (the zero time if unknown).
func newPhoto(v photo.Version, w, h, tw, th int, size int64, taken time.Time) Photo {
	p := Photo{PhotoV: v, PhotoW: w, PhotoH: h, ThumbW: tw, ThumbH: th, PhotoBytes: size}
	if !taken.IsZero() {
		p.PhotoTaken = taken.Format(takenLayout)
	}
	return p
}

// PhotoOf returns the Photo of version v for copies the pipeline made
// (sizes and capture time from proc), for a writer that stores proc's two
// copies itself (the demo seed).
func PhotoOf(proc *photo.Processed, v photo.Version) Photo {
	return newPhoto(v, proc.Width, proc.Height, proc.ThumbWidth, proc.ThumbHeight, proc.Size(), proc.Taken)
}

// DateTime returns the meal's date and time of day as a wall-clock time
// (in UTC, which stands for no zone), for formatting.
func (m *Meal) DateTime() time.Time {
	t, _ := time.Parse("2006-01-02 15:04:05", m.Date+" "+m.Time)
	return t
}

// HasPhoto reports whether the meal has a photo.
func (m *Meal) HasPhoto() bool { return m.PhotoV != 0 }

// PhotoURL returns the owner's URL of the meal's photo in size:
// "/photo/2026-09-01/123000-abcdef?v=…" (with "&size=thumb" for the
// thumbnail). The ?v= tag changes whenever the bytes do.
func (m *Meal) PhotoURL(size photo.Size) string {
	u := "/photo/" + m.Date + "/" + m.ID + "?v=" + m.PhotoV.Tag()
	if size == photo.SizeThumb {
		u += "&size=thumb"
	}
	return u
}

// ThumbURL is PhotoURL(photo.SizeThumb), for templates.
func (m *Meal) ThumbURL() string { return m.PhotoURL(photo.SizeThumb) }

// DisplayURL is PhotoURL(photo.SizeDisplay), for templates.
func (m *Meal) DisplayURL() string { return m.PhotoURL(photo.SizeDisplay) }

// PhotoKeys returns the S3 keys of the meal's photo copies, the ones its
// PhotoSet holds, display copy first, then the thumbnail, then the sized
// copies (photo.Set.Sizes). It is the one list of a meal's objects:
// writes, moves, deletion, the orphan check and its repairs all take it.
func (m *Meal) PhotoKeys() []string {
	sizes := m.PhotoSet.Sizes()
	keys := make([]string, len(sizes))
	for i, s := range sizes {
		keys[i] = photo.Key(m.UserID, m.Date, m.ID, s)
	}
	return keys
}

// PhotoDims returns the pixel sizes the row records of the copies.
func (m *Meal) PhotoDims() photo.Dims {
	return photo.Dims{W: m.PhotoW, H: m.PhotoH, TW: m.ThumbW, TH: m.ThumbH}
}

// Picture returns the meal's photo in slot for the owner's pages, its
// copies under "/photo/{date}/{meal_id}" (PhotoURL), with alt text alt.
func (m *Meal) Picture(slot photo.Slot, alt string) photo.Picture {
	p := photo.NewPicture("/photo/"+m.Date+"/"+m.ID, m.PhotoV, m.PhotoSet, m.PhotoDims(), slot)
	p.Alt = alt
	return p
}

// TakenTime returns the photo's capture time (PhotoTaken) as a wall-clock
// time, or an error if there is none.
func (m *Meal) TakenTime() (time.Time, error) {
	return time.Parse(takenLayout, m.PhotoTaken)
}

// DetailURL returns the owner's page of the meal: "/meals/2026-09-01/123000-abcdef".
func (m *Meal) DetailURL() string { return "/meals/" + m.Date + "/" + m.ID }

// HHMM returns the meal's time as "HH:MM".
func (m *Meal) HHMM() string {
	if len(m.Time) >= 5 {
		return m.Time[:5]
	}
	return m.Time
}

// Day is one day of meals, in chronological order, with its totals.
type Day struct {
	Date  Date
	Meals []Meal
	// Kcal, ProteinG, CarbsG and FatG are exact decimal sums of the meals'
	// numbers; each is nil if no meal of the day records it (a blank is
	// not a 0).
	Kcal, ProteinG, CarbsG, FatG *Number
}

// GroupByDay groups meals sorted by sort key into days, newest day first,
// meals within a day oldest first.
func GroupByDay(meals []Meal) []Day {
	var days []Day
	for _, m := range meals {
		if len(days) == 0 || days[len(days)-1].Date.String() != m.Date {
			d, _ := ParseDate(m.Date)
			days = append(days, Day{Date: d})
		}
		day := &days[len(days)-1]
		day.Meals = append(day.Meals, m)
		day.Kcal = addNumber(day.Kcal, m.Kcal)
		day.ProteinG = addNumber(day.ProteinG, m.ProteinG)
		day.CarbsG = addNumber(day.CarbsG, m.CarbsG)
		day.FatG = addNumber(day.FatG, m.FatG)
	}
	for i, j := 0, len(days)-1; i < j; i, j = i+1, j-1 {
		days[i], days[j] = days[j], days[i]
	}
	return days
}

// addNumber returns sum + n in decimal, never float64; a nil n leaves sum
// as it is and a nil sum starts from n.
func addNumber(sum, n *Number) *Number {
	switch {
	case n == nil:
		return sum
	case sum == nil:
		return &Number{n.d}
	}
	return &Number{sum.d.Add(n.d)}
}
