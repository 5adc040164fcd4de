package archive

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/shopspring/decimal"
)

// Layouts of the format's date and time fields.
const (
	dateLayout  = "2006-01-02"
	timeLayout  = "15:04:05"
	takenLayout = "2006-01-02T15:04:05"
)

// decodeMeals reads meals.json from r as a stream (one meal held as raw
// JSON at a time, at most maxValue bytes of it read ahead: a longer meal,
// or any other value or key that long, is refused before it is held),
// refusing anything its schema does not allow: docs/EXPORT-FORMAT.md,
// meals.json. Fields it does not know are skipped.
//
// With keep false it only counts the meals (each read as raw JSON and
// dropped): no meal is held, so a meals.json past maxMeals is refused
// with no more memory than one meal's JSON, whatever its length; the
// meals returned are then nil.
func decodeMeals(r io.Reader, maxMeals int, maxValue int64, keep bool) (Header, []Meal, error) {
	cr := &capReader{r: r, max: maxValue}
	dec := json.NewDecoder(cr)
	cr.dec = dec
	var h Header
	cr.arm(0)
	if err := delim(dec, '{', "meals.json is not a JSON object"); err != nil {
		return h, nil, err
	}
	var meals []Meal
	seenMeals, seenFormat := false, false
	for cr.arm(0); dec.More(); cr.arm(0) {
		tok, err := dec.Token()
		if err != nil {
			return h, nil, jsonRefusal(MealsFile, err)
		}
		key, _ := tok.(string)
		switch key {
		case "meals":
			if seenMeals {
				return h, nil, refuse("meals.json holds two meals lists")
			}
			seenMeals = true
			if meals, err = decodeList(dec, cr, maxMeals, keep); err != nil {
				return h, nil, err
			}
			continue
		case "format":
			seenFormat = true
		}
		var raw json.RawMessage
		cr.arm(0)
		if err := dec.Decode(&raw); err != nil {
			return h, nil, jsonRefusal(MealsFile, err)
		}
		o := object{where: "meals.json", raw: map[string]json.RawMessage{key: raw}}
		switch key {
		case "format":
			h.Format = o.integer("format")
		case "exported_at":
			h.ExportedAt = o.time("exported_at")
		case "email":
			h.Email = o.str("email")
		case "time_zone":
			h.TimeZone = o.str("time_zone")
		}
		if o.err != nil {
			return h, nil, o.err
		}
		if key == "format" {
			if err := checkFormat(h.Format); err != nil {
				return h, nil, err
			}
		}
	}
	cr.arm(0)
	if err := delim(dec, '}', "meals.json is not a JSON object"); err != nil {
		return h, nil, err
	}
	cr.arm(0)
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		if err != nil {
			return h, nil, jsonRefusal(MealsFile, err)
		}
		return h, nil, refuse("meals.json holds more than one JSON value")
	}
	if !seenFormat {
		h.Format = Format1
	}
	if !seenMeals {
		return h, nil, refuse("meals.json has no \"meals\" list")
	}
	return h, meals, nil
}

// checkFormat refuses a format this reader does not know.
func checkFormat(f int) error {
	switch {
	case f > Current:
		return refuse("meals.json is format %d, made by a newer ndiro; this one reads formats %d to %d: upgrade it, then import again", f, Format1, Current)
	case f < Format1:
		return refuse("meals.json: format %d is not a format of ndiro's (they start at %d)", f, Format1)
	}
	return nil
}

// delim reads one token and refuses it, with msg, unless it is d.
func delim(dec *json.Decoder, d json.Delim, msg string) error {
	tok, err := dec.Token()
	if err != nil {
		return jsonRefusal(MealsFile, err)
	}
	if tok != d {
		return refuse("%s", msg)
	}
	return nil
}

// capReader passes r, the reader of dec, through, and fails a read
// (with a *Refusal) that would take it more than max bytes past where
// dec stood when arm was last called: json.Decoder holds a value whole
// before it decodes it, so this bounds what one value costs.
type capReader struct {
	r     io.Reader
	dec   *json.Decoder
	max   int64
	read  int64
	limit int64
	meal  int // the meal being read (from 1), or 0
}

// arm allows the next value of dec (meal number meal, or 0 for any
// other) max bytes from where dec stands.
func (c *capReader) arm(meal int) {
	c.limit, c.meal = c.dec.InputOffset()+c.max, meal
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.read >= c.limit {
		if c.meal > 0 {
			return 0, refuse("meals.json: meal %d is longer than %d bytes of JSON, more than any meal a diary holds", c.meal, c.max)
		}
		return 0, refuse("meals.json holds a value longer than %d bytes outside its meals, more than any such field holds", c.max)
	}
	if int64(len(p)) > c.limit-c.read {
		p = p[:c.limit-c.read]
	}
	n, err := c.r.Read(p)
	c.read += int64(n)
	return n, err
}

// decodeList reads the meals array, one meal at a time.
func decodeList(dec *json.Decoder, cr *capReader, maxMeals int, keep bool) ([]Meal, error) {
	cr.arm(0)
	tok, err := dec.Token()
	if err != nil {
		return nil, jsonRefusal(MealsFile, err)
	}
	if tok != json.Delim('[') {
		return nil, refuse("meals.json: meals is %s; it must be a list", kindOfToken(tok))
	}
	var meals []Meal
	for n := 0; more(dec, cr, n+1); n++ {
		if n == maxMeals {
			return nil, refuse("meals.json holds more than %d meals, more than one import takes", maxMeals)
		}
		var raw json.RawMessage
		cr.arm(n + 1)
		if err := dec.Decode(&raw); err != nil {
			return nil, jsonRefusal(MealsFile, err)
		}
		if !keep {
			continue
		}
		m, err := decodeMeal(raw, n+1)
		if err != nil {
			return nil, err
		}
		meals = append(meals, m)
	}
	cr.arm(0)
	if _, err := dec.Token(); err != nil { // the closing ]
		return nil, jsonRefusal(MealsFile, err)
	}
	return meals, nil
}

// more is dec.More with meal n's bytes allowed: More reads on through
// the space before the next value.
func more(dec *json.Decoder, cr *capReader, n int) bool {
	cr.arm(n)
	return dec.More()
}

// decodeMeal reads the meal numbered n (from 1) from its raw JSON.
func decodeMeal(raw json.RawMessage, n int) (Meal, error) {
	where := fmt.Sprintf("meals.json: meal %d", n)
	o, err := objectOf(raw, where)
	if err != nil {
		return Meal{}, err
	}
	m := Meal{
		ID:         o.str("id"),
		Date:       o.layout("date", dateLayout, "a date like 2026-09-01", true),
		Time:       o.layout("time", timeLayout, "a time like 12:30:00", true),
		Kind:       o.str("kind"),
		Notes:      o.str("notes"),
		Kcal:       o.num("kcal"),
		ProteinG:   o.num("protein_g"),
		CarbsG:     o.num("carbs_g"),
		FatG:       o.num("fat_g"),
		Hunger:     o.scale("hunger"),
		Fullness:   o.scale("fullness"),
		PhotoTaken: o.layout("photo_taken", takenLayout, "a time like 2026-09-01T12:30:00", false),
		CreatedAt:  o.time("created_at"),
		UpdatedAt:  o.time("updated_at"),
	}
	if o.err == nil && m.Kind == "" {
		o.fail("kind is missing or empty; it must name the kind of meal")
	}
	if o.err != nil {
		return Meal{}, o.err
	}
	if p, ok := o.present("photo"); ok {
		if m.Photo, err = decodePhoto(p, where+": photo"); err != nil {
			return Meal{}, err
		}
	}
	if c, ok := o.present("comments"); ok {
		if m.Comments, err = decodeComments(c, where); err != nil {
			return Meal{}, err
		}
	}
	return m, nil
}

func decodePhoto(raw json.RawMessage, where string) (*PhotoRef, error) {
	o, err := objectOf(raw, where)
	if err != nil {
		return nil, err
	}
	p := &PhotoRef{
		File:    o.str("file"),
		URL:     o.str("url"),
		Missing: o.boolean("missing"),
		Width:   o.size("width"),
		Height:  o.size("height"),
	}
	if o.err == nil && !p.Missing && p.File == "" {
		o.fail("file is missing; a photo needs the name of its file in the zip, or \"missing\": true")
	}
	if p.Missing {
		p.File = ""
	}
	return p, errOrNil(o.err)
}

func decodeComments(raw json.RawMessage, where string) ([]Comment, error) {
	if raw[0] != '[' {
		return nil, refuse("%s: comments is %s; it must be a list", where, kindOf(raw))
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, jsonRefusal(MealsFile, err)
	}
	out := make([]Comment, 0, len(list))
	for i, c := range list {
		o, err := objectOf(c, fmt.Sprintf("%s: comment %d", where, i+1))
		if err != nil {
			return nil, err
		}
		out = append(out, Comment{ID: o.str("id"), ShareID: o.str("share_id"), From: o.str("from"), Text: o.str("text"), At: o.time("at")})
		if o.err != nil {
			return nil, o.err
		}
	}
	return out, nil
}

// errOrNil keeps a nil *Refusal from becoming a non-nil error.
func errOrNil(r *Refusal) error {
	if r == nil {
		return nil
	}
	return r
}

// object is one JSON object of meals.json, its fields read one by one
// with their types checked: the first wrong one is err, naming where
// (the meal's number) and the field.
type object struct {
	where string
	raw   map[string]json.RawMessage
	err   *Refusal
}

// objectOf splits raw, which must be a JSON object, into its fields.
func objectOf(raw json.RawMessage, where string) (*object, error) {
	if len(raw) == 0 || raw[0] != '{' {
		return nil, refuse("%s is %s; it must be an object", where, kindOf(raw))
	}
	o := &object{where: where}
	if err := json.Unmarshal(raw, &o.raw); err != nil {
		return nil, jsonRefusal(MealsFile, err)
	}
	return o, nil
}

func (o *object) fail(format string, args ...any) {
	if o.err == nil {
		o.err = refuse("%s: %s", o.where, fmt.Sprintf(format, args...))
	}
}

// present returns the field's raw value unless it is absent or null.
func (o *object) present(name string) (json.RawMessage, bool) {
	v, ok := o.raw[name]
	if !ok || string(v) == "null" {
		return nil, false
	}
	return v, true
}

// typed returns the field's value if it is present and of the JSON kind
// want ("a string", "a number", "true or false"), failing otherwise.
func (o *object) typed(name, want string) (json.RawMessage, bool) {
	v, ok := o.present(name)
	if !ok || o.err != nil {
		return nil, false
	}
	if got := kindOf(v); got != want {
		o.fail("%s is %s; it must be %s", name, got, want)
		return nil, false
	}
	return v, true
}

func (o *object) str(name string) string {
	v, ok := o.typed(name, "a string")
	if !ok {
		return ""
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		o.fail("%s is not a valid JSON string", name)
	}
	return s
}

// layout reads a string field that must parse with layout (what names it
// for a person); required says whether it may be absent.
func (o *object) layout(name, layout, what string, required bool) string {
	if _, ok := o.present(name); !ok {
		if required {
			o.fail("%s is missing; it must be %s", name, what)
		}
		return ""
	}
	s := o.str(name)
	if o.err != nil {
		return ""
	}
	if t, err := time.Parse(layout, s); err != nil || t.Format(layout) != s {
		o.fail("%s %q is not %s", name, s, what)
	}
	return s
}

func (o *object) time(name string) time.Time {
	v := o.str(name)
	if o.err != nil || v == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		o.fail("%s %q is not a time like 2026-09-01T12:30:00Z", name, v)
	}
	return t
}

func (o *object) boolean(name string) bool {
	v, ok := o.typed(name, "true or false")
	return ok && string(v) == "true"
}

// maxNumber is the longest number text taken: far beyond any meal's
// number, short enough that no decimal made from it is costly.
const maxNumber = 24

// num reads a decimal number: a bare JSON number in plain notation, no
// exponent (an exponent can ask a decimal for a billion digits).
func (o *object) num(name string) *decimal.Decimal {
	v, ok := o.typed(name, "a number")
	if !ok {
		return nil
	}
	if len(v) > maxNumber || !plainNumber(string(v)) {
		o.fail("%s is %.24s; it must be a plain decimal number like 512.5", name, v)
		return nil
	}
	d, err := decimal.NewFromString(string(v))
	if err != nil {
		o.fail("%s is %s; it must be a plain decimal number like 512.5", name, v)
		return nil
	}
	return &d
}

// integer reads a whole JSON number that fits in an int32.
func (o *object) integer(name string) int {
	v, ok := o.typed(name, "a number")
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(string(v), 10, 32)
	if err != nil {
		o.fail("%s is %.24s; it must be a whole number", name, v)
	}
	return int(n)
}

// scale reads hunger or fullness: 1 to 5, or 0 for blank.
func (o *object) scale(name string) int {
	n := o.integer(name)
	if o.err == nil && (n < 0 || n > 5) {
		o.fail("%s is %d; it must be 1 to 5", name, n)
	}
	return n
}

// size reads a pixel size: a whole number from 0 to 1,000,000.
func (o *object) size(name string) int {
	n := o.integer(name)
	if o.err == nil && (n < 0 || n > 1_000_000) {
		o.fail("%s is %d; it must be a pixel size from 0 to 1000000", name, n)
	}
	return n
}

// plainNumber reports whether s is an optional '-', digits, and
// optionally '.' and digits.
func plainNumber(s string) bool {
	if s != "" && s[0] == '-' {
		s = s[1:]
	}
	digits, dot := 0, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			digits++
		case c == '.' && !dot && digits > 0 && i < len(s)-1:
			dot = true
		default:
			return false
		}
	}
	return digits > 0
}

// kindOf names the JSON kind of a raw value for a person: "a string",
// "a number", "true or false", "an object", "a list" or "null".
func kindOf(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "empty"
	}
	switch raw[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "a list"
	case 't', 'f':
		return "true or false"
	case 'n':
		return "null"
	}
	return "a number"
}

// kindOfToken names a json.Decoder token's kind as kindOf does.
func kindOfToken(tok json.Token) string {
	switch t := tok.(type) {
	case json.Delim:
		if t == '{' {
			return "an object"
		}
		return "a list"
	case string:
		return "a string"
	case bool:
		return "true or false"
	case nil:
		return "null"
	}
	return "a number"
}

// jsonRefusal turns a JSON decoding error into a Refusal naming file,
// passing a Refusal (an entry read failing its checks) or an error of
// the reader through.
func jsonRefusal(file string, err error) error {
	var r *Refusal
	var syn *json.SyntaxError
	switch {
	case errors.As(err, &r):
		return r
	case errors.As(err, &syn):
		return refuse("%s is not valid JSON (at byte %d: %v)", file, syn.Offset, syn)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return refuse("%s ends in the middle of its JSON: the file is cut short", file)
	}
	var ty *json.UnmarshalTypeError
	if errors.As(err, &ty) {
		return refuse("%s: %s is a JSON %s; it must be %s", file, ty.Field, ty.Value, ty.Type)
	}
	return err
}
