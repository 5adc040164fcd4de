package meal

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/text/unicode/norm"

	"ndiro/internal/dynamo"
	"ndiro/internal/text"
	"ndiro/internal/user"
	"ndiro/internal/web"
)

// Search reads the owner's own partition, newest first, and matches in Go:
// DynamoDB has no full-text search, a FilterExpression would read (and
// bill) the same items, and a stored normalised copy of the notes would
// add its bytes to every month page's Query (DESIGN.md, search). Each page
// of results costs a bounded read, paced under the table's read cap.
const (
	// SearchPageItems is the most items one page of results reads. A
	// search through a whole 5-year diary (about 7,300 meals) takes
	// 8 pages ("older results").
	SearchPageItems = 1000
	// SearchQueryItems is the Limit of each Query call within a page.
	SearchQueryItems = 100
	// SearchResults is the most matches a page shows: a page ends at its
	// SearchResults-th match, and the next goes on below it (reading the
	// rest of that Query call's items again, at most SearchQueryItems-1).
	SearchResults = 24
	// MaxSearchRunes is the longest search text, in characters.
	MaxSearchRunes = 100
	// SearchReadUnitsPerSecond is what searches may read, all owners
	// together: 20 % of deploy/terraform's max_read_request_units (500),
	// with at most SearchReadUnitsBurst at once (a page of 1,000 meals
	// of typical size costs about 45 units read eventually consistent).
	SearchReadUnitsPerSecond = 100
	SearchReadUnitsBurst     = 200
	// SearchWait is the longest a search waits for read units before it
	// is answered 503 with Retry-After.
	SearchWait = 10 * time.Second
)

// SearchPage is one page of a search.
type SearchPage struct {
	// Meals are the matches, newest first.
	Meals []Meal
	// Read is how many items the page read (DynamoDB's ScannedCount), and
	// Units the read units they cost (consumed capacity as DynamoDB reports
	// it, else estimated from the items' sizes, eventually consistent).
	Read  int
	Units float64
	// Oldest is the date of the oldest meal read ("" if none); Next the
	// sort key to continue below, "" once the oldest meal was read.
	Oldest, Next string
}

// Search reads userID's meals newest first, below the sort key before
// ("" for the newest), with Query calls of SearchQueryItems items, each
// paid for through pace before it is sent (as much as the call before it
// cost, the rest right after, like dynamo.ScanPaced), and returns those
// for which match is true. It stops at the SearchResults-th match, after
// the Query call that reaches SearchPageItems items read, or at the
// oldest meal. ErrBadKey for a before that is not a sort key.
func (s *Store) Search(ctx context.Context, userID, before string, match func(*Meal) bool, pace dynamo.Pace) (SearchPage, error) {
	var page SearchPage
	cond := expression.Key("user_id").Equal(expression.Value(userID))
	if before != "" {
		if _, _, err := ParseSortKey(before); err != nil {
			return page, fmt.Errorf("meal: search: %w", err)
		}
		cond = cond.And(expression.Key("sk").LessThan(expression.Value(before)))
	} else {
		cond = cond.And(belowClaims())
	}
	expr, err := expression.NewBuilder().WithKeyCondition(cond).Build()
	if err != nil {
		return page, fmt.Errorf("meal: search: %w", err)
	}
	limit := int32(SearchQueryItems)
	if s.pageLimit > 0 {
		limit = s.pageLimit
	}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		Limit:                     aws.Int32(limit),
		ScanIndexForward:          aws.Bool(false),
		KeyConditionExpression:    expr.KeyCondition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityTotal,
	}
	ahead := 1
	for {
		if err := pace(ctx, ahead); err != nil {
			return page, fmt.Errorf("meal: search: %w", err)
		}
		out, err := s.db.Query(ctx, in)
		if err != nil {
			return page, fmt.Errorf("meal: search: %w", err)
		}
		units := queryUnits(out)
		if more := int(math.Ceil(units)) - ahead; more > 0 {
			if err := pace(ctx, more); err != nil {
				return page, fmt.Errorf("meal: search: %w", err)
			}
		}
		ahead = max(1, int(math.Ceil(units)))
		page.Units += units
		page.Read += int(max(out.ScannedCount, out.Count))
		var meals []Meal
		if err := attributevalue.UnmarshalListOfMaps(out.Items, &meals); err != nil {
			return page, fmt.Errorf("meal: search: decode: %w", err)
		}
		for i := range meals {
			if !match(&meals[i]) {
				continue
			}
			page.Meals = append(page.Meals, meals[i])
			if len(page.Meals) == SearchResults && (i < len(meals)-1 || out.LastEvaluatedKey != nil) {
				// A full page: the next goes on below this meal, reading
				// the rest of this call's items again.
				page.Oldest, page.Next = meals[i].Date, meals[i].SK
				return page, nil
			}
		}
		if len(meals) > 0 {
			page.Oldest = meals[len(meals)-1].Date
		}
		page.Next = ""
		if sk, ok := out.LastEvaluatedKey["sk"].(*types.AttributeValueMemberS); ok {
			page.Next = sk.Value
		}
		if page.Next == "" || page.Read >= SearchPageItems {
			return page, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// queryUnits is what a Query call cost in read units: the consumed
// capacity DynamoDB reports or, where a server reports none (the
// emulators), DynamoDB's rule applied to the items read: their sizes
// summed, in 4 KB units rounded up, halved for an eventually consistent
// read. An empty page costs 0.5.
func queryUnits(out *dynamodb.QueryOutput) float64 {
	if cc := out.ConsumedCapacity; cc != nil && cc.CapacityUnits != nil {
		return *cc.CapacityUnits
	}
	n := 0
	for _, it := range out.Items {
		n += itemBytes(it)
	}
	return max(1, math.Ceil(float64(n)/4096)) / 2
}

// itemBytes is an item's size as DynamoDB counts it, near enough for
// pacing: each attribute's name and value in UTF-8 bytes, a number as its
// digits (DynamoDB stores about half of that, so this errs high), one byte
// for a boolean or null, and lists and maps by their elements plus 3 bytes.
func itemBytes(item map[string]types.AttributeValue) int {
	n := 0
	for k, v := range item {
		n += len(k) + valueBytes(v)
	}
	return n
}

func valueBytes(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return len(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberM:
		return 3 + itemBytes(v.Value)
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + valueBytes(e)
		}
		return n
	case *types.AttributeValueMemberSS:
		n := 0
		for _, e := range v.Value {
			n += len(e)
		}
		return n
	case *types.AttributeValueMemberNS:
		n := 0
		for _, e := range v.Value {
			n += len(e)
		}
		return n
	}
	return 1
}

// Fold returns s as search compares it: compatibility-decomposed (NFKD:
// the ligature "ﬁ" is "fi", "é" is "e" and a combining accent), every
// combining mark removed ("crème brûlée" is "creme brulee"), lower-cased
// ("Straße" is "strasse", the final sigma "ς" is "σ"), and the letters
// with a stroke or without a dot that no decomposition splits written
// plain (ø o, ł l, đ d, ħ h, ŧ t, ı i, æ ae, œ oe). It reads the
// decompositions from the Unicode tables without allocating per
// character: a search page folds 1,000 notes (BenchmarkMatch). ASCII text
// only has its case lowered, without allocating when it has none.
func Fold(s string) string {
	i := 0
	for i < len(s) && s[i] < utf8.RuneSelf {
		i++
	}
	if i == len(s) {
		return strings.ToLower(s)
	}
	out := make([]byte, 0, len(s)+8)
	for j := 0; j < i; j++ {
		out = append(out, lowerASCII(s[j]))
	}
	for i < len(s) {
		if c := s[i]; c < utf8.RuneSelf {
			out = append(out, lowerASCII(c))
			i++
			continue
		}
		p := norm.NFKD.PropertiesString(s[i:])
		n := max(p.Size(), 1)
		if d := p.Decomposition(); d != nil {
			for k := 0; k < len(d); {
				r, w := utf8.DecodeRune(d[k:])
				out = appendFolded(out, r)
				k += w
			}
		} else {
			r, _ := utf8.DecodeRuneInString(s[i:])
			out = appendFolded(out, r)
		}
		i += n
	}
	return string(out)
}

func lowerASCII(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// plain are the letters Fold writes plain, by their lower case.
var plain = map[rune]string{'ß': "ss", 'ø': "o", 'ł': "l", 'đ': "d", 'ħ': "h", 'ŧ': "t", 'ı': "i", 'æ': "ae", 'œ': "oe", 'ς': "σ"}

// appendFolded appends r lower-cased and written plain, or nothing for a
// combining mark.
func appendFolded(out []byte, r rune) []byte {
	if r < utf8.RuneSelf {
		return append(out, lowerASCII(byte(r)))
	}
	if unicode.Is(unicode.Mn, r) {
		return out
	}
	r = unicode.ToLower(r)
	if p, ok := plain[r]; ok {
		return append(out, p...)
	}
	return utf8.AppendRune(out, r)
}

// Matcher returns the test of a search q: every word of q (split on
// spaces, folded as Fold does) occurs somewhere in the meal's kind or
// notes, folded the same way, in any order; "soup" finds "Soups" and
// "Lentil SOUP". An empty q matches nothing.
func Matcher(q string) func(*Meal) bool {
	words := strings.Fields(Fold(q))
	if len(words) == 0 {
		return func(*Meal) bool { return false }
	}
	return func(m *Meal) bool {
		hay := Fold(m.Notes)
		for _, w := range words {
			if !strings.Contains(hay, w) && !strings.Contains(string(m.Kind), w) {
				return false
			}
		}
		return true
	}
}

// searchView is the search page's state, as the list template shows it.
type searchView struct {
	// Query is the search as typed; Error the message of a refused one.
	Query, Error string
	// Ran is true once a search was run (a query was given).
	Ran bool
	// Found is how many meals this page shows; Read how many it read.
	Found, Read int
	// Reach words how far back this page looked: "back to 3 Mar 2024",
	// or "" once it reached the oldest meal.
	Reach string
	// Continued is true on an "older results" page.
	Continued bool
	// More links to the older results; "" at the oldest meal.
	More string
}

// errSearchBusy is the 503 for a search that waited SearchWait for read
// units: every owner's searches share them.
var errSearchBusy = errors.New("meal: search: no read units in time")

// Search is GET /meals/search?q=…(&before=sort key): the owner's meals
// whose notes or kind hold every word of q, whatever their case and
// accents, newest first, as the diary's cards under their days. A page
// reads at most SearchPageItems meals, paced with every other search under
// the table's read cap (Store.Search); "older results" goes on from the
// last meal read. Without q it shows only the search form. A q longer than
// MaxSearchRunes or holding control or format characters, or a before
// that is not a sort key, is a 400 with the form and a message.
func (h *Handler) Search(w http.ResponseWriter, r *http.Request) error {
	u := user.FromContext(r.Context())
	q := r.URL.Query()
	sv := &searchView{Query: strings.TrimSpace(q.Get("q"))}
	p := &listPage{Base: web.Base{Title: "Search"}, Heading: "Search your diary", Search: sv}
	refuse := func(msg string) error {
		sv.Error = msg
		sv.Query = text.Without(sv.Query, false, MaxSearchRunes)
		return h.pages.Render(w, r, http.StatusBadRequest, "meal/list", p)
	}
	if c, bad := text.Refused(sv.Query, false); bad {
		return refuse(fmt.Sprintf("Search for words only: %s cannot be searched for.", text.Name(c)))
	}
	if n := utf8.RuneCountInString(sv.Query); n > MaxSearchRunes {
		return refuse(fmt.Sprintf("Search for at most %d characters; this was %d.", MaxSearchRunes, n))
	}
	before := q.Get("before")
	if before != "" {
		if _, _, err := ParseSortKey(before); err != nil {
			return refuse("This “older results” link is damaged: search again from the newest meals.")
		}
	}
	if sv.Query == "" {
		return h.pages.Render(w, r, http.StatusOK, "meal/list", p)
	}
	p.Title = "Search: " + sv.Query
	ctx, cancel := context.WithTimeout(r.Context(), SearchWait)
	defer cancel()
	res, err := h.store.Search(ctx, u.ID, before, Matcher(sv.Query), h.searchPace.Wait)
	switch {
	case errors.Is(err, context.DeadlineExceeded) && r.Context().Err() == nil:
		w.Header().Set("Retry-After", "5")
		return &web.Error{Status: http.StatusServiceUnavailable, Title: "Search is busy",
			Msg: "Many searches are running at the moment. Wait a few seconds and search again.", Err: errSearchBusy}
	case err != nil:
		return err
	}
	sv.Ran, sv.Found, sv.Read, sv.Continued = true, len(res.Meals), res.Read, before != ""
	if res.Next != "" {
		sv.More = "/meals/search?" + url.Values{"q": {sv.Query}, "before": {res.Next}}.Encode()
		if d, err := ParseDate(res.Oldest); err == nil {
			sv.Reach = "back to " + d.Time().Format("2 Jan 2006")
		}
	}
	// Oldest first into GroupByDay, which puts the newest day first.
	meals := res.Meals
	for i, j := 0, len(meals)-1; i < j; i, j = i+1, j-1 {
		meals[i], meals[j] = meals[j], meals[i]
	}
	p.Dense = denseGrid(w, r, url.Values{})
	p.Days = gridDays(GroupByDay(meals), true, p.Dense)
	for i := range p.Days {
		// Only the matches of a day are here: their sum is no day's total.
		g := &p.Days[i]
		g.Kcal, g.ProteinG, g.CarbsG, g.FatG = "", "", "", ""
	}
	return h.pages.Render(w, r, http.StatusOK, "meal/list", p)
}
