package share_test

import (
	"bytes"
	"context"
	"fmt"
	"image/color"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"ndiro/internal/apptest"
	"ndiro/internal/localenv"
	"ndiro/internal/photo"
	"ndiro/internal/share"
	"ndiro/internal/user"
)

// TestRevokeStopsCachedPhoto: a photo hot in the in-process cache is
// refused at the very next request after the owner revokes the link,
// without the cache being asked; a revalidation with the photo's ETag gets
// the refusal, not a 304.
func TestRevokeStopsCachedPhoto(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	anon := w.app.Client()
	path := photoPath(w.valid, w.inRange, photo.SizeDisplay)
	cache := w.app.Photos.Cache()

	first := anon.Get(path)
	if first.StatusCode != http.StatusOK {
		t.Fatalf("photo = %d, want 200", first.StatusCode)
	}
	if got := first.Header.Get("Cache-Control"); got != "private, no-cache" {
		t.Errorf("share photo Cache-Control = %q, want %q", got, "private, no-cache")
	}
	etag := first.Header.Get("ETag")
	// Revalidation while the link holds: a 304 with no body, from the cache.
	before := cache.Stats()
	reval := request(t, anon, w.app.URL, "GET", path, "If-None-Match", etag)
	if reval.StatusCode != http.StatusNotModified || reval.Body != "" {
		t.Fatalf("revalidation = %d with %d bytes, want 304 with none", reval.StatusCode, len(reval.Body))
	}
	if got := reval.Header.Get("Cache-Control"); got != "private, no-cache" {
		t.Errorf("304 Cache-Control = %q, want %q", got, "private, no-cache")
	}
	hot := cache.Stats()
	if hot.Hits != before.Hits+1 {
		t.Fatalf("cache hits %d → %d, want one more: the photo is not hot in the cache", before.Hits, hot.Hits)
	}

	if resp := w.owner.PostForm("/shares/"+w.valid+"/revoke", nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("revoke = %d, want 303", resp.StatusCode)
	}
	for _, hdr := range [][]string{nil, {"If-None-Match", etag}} {
		resp := request(t, anon, w.app.URL, "GET", path, hdr...)
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("photo after revoke (headers %q) = %d, want 404", hdr, resp.StatusCode)
		}
		if strings.Contains(resp.Body, "\xff\xd8\xff") {
			t.Error("photo bytes served after revoke")
		}
		checkRecipientHeaders(t, resp)
	}
	after := cache.Stats()
	if after.Hits != hot.Hits || after.Misses != hot.Misses {
		t.Errorf("cache asked after revoke (hits %d → %d, misses %d → %d): the share check must come first", hot.Hits, after.Hits, hot.Misses, after.Misses)
	}
	if after.Items == 0 {
		t.Error("the photo left the cache: the test no longer shows a hot photo refused")
	}
}

// setStatus writes a users row's status directly, as an edit made outside
// the app (the console) would: the app's cache sees it only once its entry
// lapses (user.CacheTTL).
func setStatus(t *testing.T, app *apptest.App, email string, status user.Status) {
	t.Helper()
	_, err := app.Env.DynamoDB.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName:                 aws.String(app.Tables.Users.Name),
		Key:                       map[string]types.AttributeValue{"user_id": &types.AttributeValueMemberS{Value: localenv.Subject(email)}},
		UpdateExpression:          aws.String("SET #s = :s"),
		ExpressionAttributeNames:  map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":s": &types.AttributeValueMemberS{Value: string(status)}},
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestStoppedLinks: expiry (410) and an owner whose account is being
// deleted, disabled or gone (404) stop pages and cached photos alike, at
// the next request.
func TestStoppedLinks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		stop func(t *testing.T, w *world)
		want int
	}{
		{"expired", func(t *testing.T, w *world) {}, http.StatusGone},
		{"owner deleting", func(t *testing.T, w *world) {
			if _, err := w.app.Users.MarkDeleting(context.Background(), localenv.Subject(ownerEmail), "photos", w.app.Clock.Now()); err != nil {
				t.Fatal(err)
			}
		}, http.StatusNotFound},
		{"owner disabled", func(t *testing.T, w *world) {
			if err := w.app.Users.SetDisabled(context.Background(), localenv.Subject(ownerEmail), true); err != nil {
				t.Fatal(err)
			}
		}, http.StatusNotFound},
		{"owner disabled outside the app", func(t *testing.T, w *world) {
			setStatus(t, w.app, ownerEmail, user.StatusDisabled)
			w.app.Clock.Advance(user.CacheTTL)
		}, http.StatusNotFound},
		{"owner gone", func(t *testing.T, w *world) {
			if err := w.app.Users.Delete(context.Background(), localenv.Subject(ownerEmail)); err != nil {
				t.Fatal(err)
			}
		}, http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			tok := w.valid
			if tc.want == http.StatusGone {
				// A link that expires in 7 days, with its photo hot in the
				// cache, then the clock moves past its end.
				tok = createShare(t, w.owner, shareForm("expiry", "7"))
			}
			anon := w.app.Client()
			path := photoPath(tok, w.inRange, photo.SizeThumb)
			if resp := anon.Get(path); resp.StatusCode != http.StatusOK {
				t.Fatalf("photo before = %d, want 200", resp.StatusCode)
			}
			if resp := anon.Get("/s/" + tok); resp.StatusCode != http.StatusOK {
				t.Fatalf("page before = %d, want 200", resp.StatusCode)
			}
			tc.stop(t, w)
			if tc.want == http.StatusGone {
				w.app.Clock.Advance(7*24*time.Hour + time.Second)
			}
			for _, p := range []string{path, "/s/" + tok, "/s/" + tok + "/week"} {
				resp := anon.Get(p)
				if resp.StatusCode != tc.want {
					t.Errorf("GET %s after %s = %d, want %d", strings.Replace(p, tok, "{token}", 1), tc.name, resp.StatusCode, tc.want)
				}
				if strings.Contains(resp.Body, "\xff\xd8\xff") {
					t.Errorf("GET %s after %s served photo bytes", p, tc.name)
				}
				checkRecipientHeaders(t, resp)
			}
			if tc.want == http.StatusGone {
				page := anon.Get("/s/" + tok).Doc()
				if got := strings.TrimSpace(page.Find("h1").Text()); got != "Link expired" {
					t.Errorf("expired page heading = %q, want Link expired", got)
				}
				if got := page.Find("main p").First().Text(); !strings.Contains(got, "has expired") {
					t.Errorf("expired page says %q, want it to say the link has expired", got)
				}
			}
		})
	}
}

// TestRedaction: a link without notes and numbers has neither anywhere
// in any recipient page (the overview and its summary, the week table,
// both meals' pages, the print page): not in text, not in attributes (alt
// texts), not as day totals or averages. kcal 512.5 may show as 512.5
// (the meal, its day) and as 513 (the average logged day, rounded), and
// protein as 37.5 g. The same meals through links that show them prove
// the fixture would be seen.
func TestRedaction(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	owner := signUp(t, app, ownerEmail, ownerName)
	const word, kcal = "Zanzibarquinoa", "512.5"
	lunch := addMeal(t, app, owner, ownerEmail, "2026-09-02", "12:30", "lunch", jpegOf(t, 64, 48, color.RGBA{200, 40, 40, 255}),
		"notes", "Spiced "+word+" bowl", "kcal", kcal, "protein_g", "37.5", "carbs_g", "77.5", "fat_g", "12.5", "hunger", "4", "fullness", "2")
	snack := addMeal(t, app, owner, ownerEmail, "2026-09-03", "16:00", "snack", nil, "notes", word+" again")
	redacted := createShare(t, owner, shareForm("notes", "", "numbers", ""))
	notesOnly := createShare(t, owner, shareForm("numbers", ""))
	full := createShare(t, owner, shareForm())

	// In text and attributes alike; "513" (kcal rounded) in the text, as
	// a meal ID or photo tag in an attribute may hold those digits.
	noteSecrets := []string{word}
	numberSecrets := []string{kcal, "37.5", "77.5", "12.5", "hunger", "fullness", "Hunger", "Fullness", "Energy", "kcal"}
	numberText := []string{"513"}
	pages := func(tok string) []string {
		return []string{"/s/" + tok, "/s/" + tok + "/week?start=2026-09-01", "/s/" + tok + "/print",
			mealPath(tok, lunch), mealPath(tok, snack)}
	}
	anon := app.Client()
	for _, tc := range []struct {
		name           string
		tok            string
		hidden, shown  []string
		hiddenText     []string
		shownText      []string
		numbersOnPages bool
	}{
		{"no notes, no numbers", redacted, append(noteSecrets, numberSecrets...), nil, numberText, nil, false},
		{"notes only", notesOnly, numberSecrets, noteSecrets, numberText, nil, false},
		{"notes and numbers", full, nil, append(noteSecrets, kcal), nil, numberText, true},
	} {
		for _, p := range pages(tc.tok) {
			t.Run(tc.name+" "+strings.Replace(p, tc.tok, "{token}", 1), func(t *testing.T) {
				resp := anon.Get(p)
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("GET = %d, want 200", resp.StatusCode)
				}
				all := everything(t, resp.Body)
				text := resp.Doc().Find("body").Text()
				for _, s := range tc.hidden {
					if strings.Contains(all, s) || strings.Contains(resp.Body, s) {
						t.Errorf("page holds %q, which this link does not show", s)
					}
				}
				for _, s := range tc.hiddenText {
					if strings.Contains(text, s) {
						t.Errorf("page text holds %q, which this link does not show", s)
					}
				}
				onLunch := !strings.Contains(p, snack.ID)
				for _, s := range tc.shown {
					if s == kcal && !onLunch {
						continue // the snack's own page has no number
					}
					if !strings.Contains(all, s) {
						t.Errorf("page lacks %q, which this link shows", s)
					}
				}
				if p == "/s/"+tc.tok {
					for _, s := range tc.shownText {
						if !strings.Contains(text, s) {
							t.Errorf("summary lacks %q, which this link shows", s)
						}
					}
				}
				if got := resp.Doc().Find(".numbers, .total, .averages").Length() > 0; got != (tc.numbersOnPages && onLunch) {
					t.Errorf("numbers, totals or averages on the page = %v, want %v", got, tc.numbersOnPages && onLunch)
				}
				if onLunch && resp.Doc().Find(`img[src*="/photo/"]`).Length() == 0 {
					t.Error("no photo on the page: photos always show")
				}
			})
		}
	}
}

// TestCaptureTimeNeverShared: a photo's capture time (EXIF
// DateTimeOriginal, stored as photo_taken) tells where the owner was when;
// it reaches the owner's own pages but no recipient's, through a link
// showing everything: not in the page or print page (text, attributes),
// not in either copy of the photo.
func TestCaptureTimeNeverShared(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	owner := signUp(t, app, ownerEmail, ownerName)
	// phone-portrait-small.jpg was taken at 2024:06:14 12:31:07 (its README
	// row); the meal is logged at another day and time.
	m := addMeal(t, app, owner, ownerEmail, "2026-09-02", "19:00", "dinner", apptest.Photo(t, "phone-portrait-small.jpg"), "notes", "risotto")
	if m.PhotoTaken != "2024-06-14T12:31:07" {
		t.Fatalf("stored capture time = %q, want the fixture's 2024-06-14T12:31:07", m.PhotoTaken)
	}
	// The owner's meal page says when the photo was taken: the fixture's
	// time is there to leak.
	own := owner.Get("/meals/" + m.Date + "/" + m.ID)
	if all := everything(t, own.Body); !strings.Contains(all, "12:31") {
		t.Fatalf("the owner's meal page does not show the capture time; the test would prove nothing")
	}
	tok := createShare(t, owner, shareForm())
	forms := []string{"2024-06-14", "2024:06:14", "14 Jun", "Jun 14", "June", "12:31", "T12:31:07", "photo_taken"}
	anon := app.Client()
	for _, p := range []string{"/s/" + tok, "/s/" + tok + "/week?start=2026-09-01"} {
		resp := anon.Get(p)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s = %d, want 200", strings.Replace(p, tok, "{token}", 1), resp.StatusCode)
		}
		if !strings.Contains(resp.Body, "risotto") {
			t.Fatalf("GET %s does not show the meal", strings.Replace(p, tok, "{token}", 1))
		}
		all := everything(t, resp.Body)
		for _, f := range forms {
			if strings.Contains(all, f) || strings.Contains(resp.Body, f) {
				t.Errorf("GET %s holds %q: the photo's capture time reached a recipient", strings.Replace(p, tok, "{token}", 1), f)
			}
		}
	}
	for _, size := range []photo.Size{photo.SizeDisplay, photo.SizeThumb} {
		resp := anon.Get(photoPath(tok, m, size))
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "image/jpeg" {
			t.Fatalf("recipient photo %s = %d %q", size, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		for _, f := range []string{"2024:06:14", "12:31:07", "Exif"} {
			if strings.Contains(resp.Body, f) {
				t.Errorf("recipient photo %s holds %q", size, f)
			}
		}
	}
}

// TestOpensCounted: 20 concurrent opens of the link add exactly 20; a
// preview fetcher of every known kind, a HEAD, the photos, the print page
// and the later pages of a long range add nothing.
func TestOpensCounted(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	owner := signUp(t, app, ownerEmail, ownerName)
	m := addMeal(t, app, owner, ownerEmail, "2026-09-02", "12:30", "lunch", jpegOf(t, 64, 48, color.RGBA{200, 40, 40, 255}))
	tok := createShare(t, owner, shareForm("to", "2026-11-30")) // long enough to page
	opens := func() int64 {
		t.Helper()
		if err := app.Shares.FlushOpens(context.Background()); err != nil {
			t.Fatal(err)
		}
		sh, err := app.Shares.Get(context.Background(), tok)
		if err != nil {
			t.Fatal(err)
		}
		return sh.Opens
	}

	const n = 20
	start := make(chan struct{})
	var wg sync.WaitGroup
	codes := make([]int, n)
	for i := range n {
		c := app.Client()
		wg.Go(func() {
			<-start
			codes[i] = c.Get("/s/" + tok).StatusCode
		})
	}
	close(start)
	wg.Wait()
	for i, code := range codes {
		if code != http.StatusOK {
			t.Fatalf("open %d = %d, want 200", i, code)
		}
	}
	if got := opens(); got != n {
		t.Fatalf("opens after %d concurrent opens = %d, want %d", n, got, n)
	}

	anon := app.Client()
	for _, ua := range []string{
		"Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)",
		"facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)",
		"facebookexternalhit/1.1 Facebot Twitterbot/1.0", // iMessage
		"Twitterbot/1.0",
		"WhatsApp/2.23.20.0 A",
		"TelegramBot (like TwitterBot)",
		"Mozilla/5.0 (compatible; Discordbot/2.0; +https://discordapp.com)",
		"LinkedInBot/1.0 (compatible; Mozilla/5.0; Apache-HttpClient +http://www.linkedin.com)",
		"Mozilla/5.0 (Windows NT 6.1; WOW64) SkypeUriPreview Preview/0.5 skype-url-preview@microsoft.com",
		"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/13.1.1 Safari/605.1.15 (Applebot/0.1; +http://www.apple.com/go/applebot)",
		"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
	} {
		t.Run(ua[:min(len(ua), 30)], func(t *testing.T) {
			resp := request(t, anon, app.URL, "GET", "/s/"+tok, "User-Agent", ua)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("preview = %d, want 200", resp.StatusCode)
			}
			doc := resp.Doc()
			if doc.Find("img").Length() != 0 || strings.Contains(resp.Body, ownerName) || strings.Contains(resp.Body, m.ID) {
				t.Error("a link preview shows a photo, the owner's name or a meal")
			}
			checkPreviewCard(t, app, doc)
			checkRecipientHeaders(t, resp)
			if p := request(t, anon, app.URL, "GET", photoPath(tok, m, photo.SizeThumb), "User-Agent", ua); p.StatusCode != http.StatusNotFound {
				t.Errorf("photo for a preview fetcher = %d, want 404", p.StatusCode)
			}
		})
	}
	head := request(t, anon, app.URL, "HEAD", "/s/"+tok)
	if head.StatusCode != http.StatusOK {
		t.Errorf("HEAD = %d, want 200", head.StatusCode)
	}
	checkRecipientHeaders(t, head)
	for _, p := range []string{
		photoPath(tok, m, photo.SizeThumb), photoPath(tok, m, photo.SizeDisplay),
		"/s/" + tok + "/week", "/s/" + tok + "?from=2026-10-02",
	} {
		if resp := anon.Get(p); resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s = %d, want 200", strings.Replace(p, tok, "{token}", 1), resp.StatusCode)
		}
	}
	if got := opens(); got != n {
		t.Errorf("opens after previews, HEAD, photos, print and paging = %d, want still %d", got, n)
	}
}

// TestRecipientPagesNameNoSecrets: no recipient response (pages, print
// page, preview, refusals) holds the owner's email, user ID, an S3 key,
// the label or the owner's session; the heading is the display name, or
// "A meal diary" without one.
func TestRecipientPagesNameNoSecrets(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ownerID := localenv.Subject(ownerEmail)
	secrets := []string{ownerEmail, ownerID, "users/", photo.UserPrefix(ownerID), ".jpg", "Dr. Rossi", otherEmail, localenv.Subject(otherEmail)}
	anon := w.app.Client()
	paths := []string{
		"/s/" + w.valid, "/s/" + w.valid + "?from=2026-09-05", "/s/" + w.valid + "/week",
		"/s/" + w.valid + "?from=2026-09-20", "/s/" + w.valid + "?from=bad",
		"/s/" + w.expired, "/s/" + w.revoked, "/s/" + w.unknown,
		"/s/" + w.valid + "/photo/2026-09-20/" + w.outOfRange.ID,
		mealPath(w.valid, w.inRange), mealPath(w.commenting, w.inRange), "/s/" + w.valid + "/print",
		mealPath(w.valid, w.outOfRange), "/shared",
	}
	for _, p := range paths {
		for _, c := range []*apptest.Client{anon, w.owner} {
			resp := c.Get(p)
			for _, s := range secrets {
				if strings.Contains(resp.Body, s) {
					t.Errorf("GET %s (%d) holds %q", p, resp.StatusCode, s)
				}
			}
			if strings.Contains(resp.Body, "Signed in as") || strings.Contains(resp.Body, "/logout") {
				t.Errorf("GET %s shows the viewer's account", p)
			}
		}
		resp := request(t, anon, w.app.URL, "GET", p, "User-Agent", "WhatsApp/2.23")
		for _, s := range append(secrets, ownerName) {
			if strings.Contains(resp.Body, s) {
				t.Errorf("preview of %s holds %q", p, s)
			}
		}
	}
	if got := strings.TrimSpace(anon.Get("/s/" + w.valid).Doc().Find("h1").Text()); got != ownerName {
		t.Errorf("h1 = %q, want %q", got, ownerName)
	}
	// Without a display name: the generic heading.
	if resp := w.owner.PostForm("/account/name", map[string][]string{"name": {""}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("clear name = %d", resp.StatusCode)
	}
	if got := strings.TrimSpace(anon.Get("/s/" + w.valid).Doc().Find("h1").Text()); got != "A meal diary" {
		t.Errorf("h1 without a name = %q, want A meal diary", got)
	}
}

// TestLongRangePages: a range longer than a page pages by PageWeeks
// weeks, each page ONE Query on the meals table, and the pages together
// show every meal of the range once.
func TestLongRangePages(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	owner := signUp(t, app, ownerEmail, ownerName)
	var want []string
	for _, d := range []string{"2026-01-01", "2026-01-31", "2026-02-01", "2026-03-15", "2026-04-10"} {
		want = append(want, addMeal(t, app, owner, ownerEmail, d, "12:00", "lunch", nil).ID+"@"+d)
	}
	addMeal(t, app, owner, ownerEmail, "2026-04-11", "12:00", "lunch", nil) // the day after the range
	tok := createShare(t, owner, shareForm("from", "2026-01-01", "to", "2026-04-10"))
	anon := app.Client()
	var got []string
	next := "/s/" + tok
	for pages := 0; next != ""; pages++ {
		if pages > 10 {
			t.Fatal("more than 10 pages")
		}
		app.Calls.Reset()
		resp := anon.Get(next)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET page %d = %d", pages, resp.StatusCode)
		}
		if q := app.Calls.Counts()["Query"]; q != 1 {
			t.Errorf("page %d made %d Queries, want 1", pages, q)
		}
		doc := resp.Doc()
		doc.Find("li.wday").Each(func(_ int, s *goquery.Selection) {
			day := strings.TrimPrefix(s.AttrOr("id", ""), "day-")
			s.Find("li.cell").Each(func(_ int, li *goquery.Selection) {
				got = append(got, strings.TrimPrefix(li.AttrOr("id", ""), "meal-")+"@"+day)
			})
		})
		next = doc.Find(`a[rel=next]`).AttrOr("href", "")
		if next != "" && !strings.HasPrefix(next, "/s/"+tok+"?from=") {
			t.Fatalf("next link = %q", next)
		}
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("meals over all pages (-want +got):\n%s", d)
	}
	// A day in the middle of a week opens on its week (2 Apr, the range's
	// weeks starting on Thursdays) and links back PageWeeks weeks.
	last := anon.Get("/s/" + tok + "?from=2026-04-03").Doc()
	if got := last.Find("section.sweek").First().AttrOr("id", ""); got != "week-2026-04-02" {
		t.Errorf("?from=2026-04-03 opens on %q, want week-2026-04-02", got)
	}
	if got := last.Find(`a[rel=prev]`).AttrOr("href", ""); got != "/s/"+tok+"?from=2026-02-26" {
		t.Errorf("prev link = %q, want ?from=2026-02-26", got)
	}
	if resp := anon.Get("/s/" + tok + "?from=2026-13-01"); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("malformed from = %d, want 400", resp.StatusCode)
	}
}

// TestWeekPage: days × meal kinds, one Query, the range's edges cut the
// week, print CSS loaded, neighbours linked, a start outside the range is
// a 404 that names the shared days.
func TestWeekPage(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	owner := signUp(t, app, ownerEmail, ownerName)
	b := addMeal(t, app, owner, ownerEmail, "2026-09-03", "08:00", "breakfast", jpegOf(t, 64, 48, color.RGBA{1, 2, 3, 255}), "kcal", "300")
	d := addMeal(t, app, owner, ownerEmail, "2026-09-03", "19:30", "dinner", nil, "kcal", "700.5")
	tok := createShare(t, owner, shareForm("from", "2026-09-02", "to", "2026-09-10"))
	anon := app.Client()

	app.Calls.Reset()
	resp := anon.Get("/s/" + tok + "/week?start=2026-09-02")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("week = %d, want 200", resp.StatusCode)
	}
	if q := app.Calls.Counts()["Query"]; q != 1 {
		t.Errorf("week made %d Queries, want 1", q)
	}
	if got := resp.Header.Get("Cache-Control"); got != "no-store" {
		t.Errorf("week Cache-Control = %q, want no-store", got)
	}
	doc := resp.Doc()
	var cols []string
	doc.Find("table.week thead th").Each(func(_ int, s *goquery.Selection) { cols = append(cols, strings.TrimSpace(s.Text())) })
	if diff := cmp.Diff([]string{"Day", "breakfast", "lunch", "dinner", "snack", "drink", "Total"}, cols); diff != "" {
		t.Errorf("columns (-want +got):\n%s", diff)
	}
	var rows []string
	doc.Find("table.week tbody tr").Each(func(_ int, s *goquery.Selection) { rows = append(rows, s.AttrOr("id", "")) })
	if diff := cmp.Diff([]string{"week-2026-09-02", "week-2026-09-03", "week-2026-09-04", "week-2026-09-05", "week-2026-09-06", "week-2026-09-07", "week-2026-09-08"}, rows); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
	row := doc.Find("#week-2026-09-03 td")
	if row.Eq(0).Find("#meal-"+b.ID+" img").Length() != 1 || row.Eq(2).Find("#meal-"+d.ID).Length() != 1 {
		t.Error("breakfast and dinner are not in their columns")
	}
	if got := strings.TrimSpace(doc.Find("#week-2026-09-03 td.total").Text()); got != "1000.5 kcal" {
		t.Errorf("day total = %q, want 1000.5 kcal", got)
	}
	if doc.Find(`link[rel=stylesheet]`).Length() != 1 {
		t.Error("no stylesheet")
	}
	css := anon.Get(doc.Find(`link[rel=stylesheet]`).AttrOr("href", "")).Body
	for _, want := range []string{"@media print", "size:A4 landscape", ".week-view{break-after:page"} {
		if !strings.Contains(css, want) {
			t.Errorf("stylesheet lacks %q", want)
		}
	}
	if got := doc.Find(`a[rel=next]`).AttrOr("href", ""); got != "/s/"+tok+"/week?start=2026-09-09" {
		t.Errorf("next week = %q", got)
	}
	// The last week is cut at the range's end.
	last := anon.Get("/s/" + tok + "/week?start=2026-09-09").Doc()
	if n := last.Find("table.week tbody tr").Length(); n != 2 {
		t.Errorf("last week has %d days, want 2 (9 and 10 Sep)", n)
	}
	if got := last.Find(`a[rel=prev]`).AttrOr("href", ""); got != "/s/"+tok+"/week?start=2026-09-02" {
		t.Errorf("prev week = %q", got)
	}
	for _, tc := range []struct {
		start string
		want  int
	}{
		{"2026-09-01", http.StatusNotFound},
		{"2026-09-11", http.StatusNotFound},
		{"2026-9-3", http.StatusBadRequest},
	} {
		resp := anon.Get("/s/" + tok + "/week?start=" + tc.start)
		if resp.StatusCode != tc.want {
			t.Errorf("week?start=%s = %d, want %d", tc.start, resp.StatusCode, tc.want)
		}
		if tc.want == http.StatusNotFound && !strings.Contains(resp.Text("main p"), "2 Sep – 10 Sep 2026") {
			t.Errorf("week?start=%s says %q, want it to name the shared days", tc.start, resp.Text("main p"))
		}
	}
}

// TestRateLimits: unknown tokens are limited per client address (429 with
// Retry-After, and then even a real link is refused from there, so hits
// cannot be told from misses); photo reads per link. Addresses come from
// the peer unless a trusted proxy header is configured.
func TestRateLimits(t *testing.T) {
	t.Parallel()
	t.Run("unknown tokens per address", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t)
		anon := w.app.Client()
		for i := range share.MissBurst {
			if resp := anon.Get("/s/" + fmt.Sprintf("%043d", i)); resp.StatusCode != http.StatusNotFound {
				t.Fatalf("miss %d = %d, want 404", i+1, resp.StatusCode)
			}
		}
		for _, p := range []string{"/s/" + w.unknown, "/s/" + w.valid, photoPath(w.valid, w.inRange, photo.SizeThumb)} {
			resp := anon.Get(p)
			if resp.StatusCode != http.StatusTooManyRequests {
				t.Errorf("GET %s after %d misses = %d, want 429", strings.Replace(p, w.valid, "{valid}", 1), share.MissBurst, resp.StatusCode)
			}
			if got := resp.Header.Get("Retry-After"); got != fmt.Sprint(int(share.MissEvery.Seconds())) {
				t.Errorf("Retry-After = %q, want %d", got, int(share.MissEvery.Seconds()))
			}
			if got, want := resp.Text("main p"), "There were too many requests for shared links from here. Try again in 6 seconds."; got != want {
				t.Errorf("429 message = %q, want %q", got, want)
			}
			checkRecipientHeaders(t, resp)
		}
		// Spoofed forwarding headers change nothing without a trusted proxy.
		if resp := request(t, anon, w.app.URL, "GET", "/s/"+w.valid, "X-Forwarded-For", "203.0.113.7"); resp.StatusCode != http.StatusTooManyRequests {
			t.Errorf("with a spoofed X-Forwarded-For = %d, want 429", resp.StatusCode)
		}
		w.app.Clock.Advance(share.MissEvery)
		if resp := anon.Get("/s/" + w.valid); resp.StatusCode != http.StatusOK {
			t.Errorf("after waiting Retry-After = %d, want 200", resp.StatusCode)
		}
	})
	t.Run("trusted proxy header", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t, apptest.Options{Env: map[string]string{"NDIRO_TRUSTED_PROXY_HEADER": "X-Forwarded-For"}})
		anon := w.app.Client()
		for i := range share.MissBurst + 1 {
			request(t, anon, w.app.URL, "GET", "/s/"+w.unknown, "X-Forwarded-For", "198.51.100.1, 203.0.113.7")
			_ = i
		}
		if resp := request(t, anon, w.app.URL, "GET", "/s/"+w.valid, "X-Forwarded-For", "203.0.113.7"); resp.StatusCode != http.StatusTooManyRequests {
			t.Errorf("same client behind the proxy = %d, want 429", resp.StatusCode)
		}
		if resp := request(t, anon, w.app.URL, "GET", "/s/"+w.valid, "X-Forwarded-For", "203.0.113.8"); resp.StatusCode != http.StatusOK {
			t.Errorf("another client behind the proxy = %d, want 200", resp.StatusCode)
		}
	})
	t.Run("photo reads per link", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t)
		anon := w.app.Client()
		path := photoPath(w.valid, w.inRange, photo.SizeThumb)
		etag := anon.Get(path).Header.Get("ETag")
		for i := 1; i < share.PhotoBurst; i++ {
			if resp := request(t, anon, w.app.URL, "GET", path, "If-None-Match", etag); resp.StatusCode != http.StatusNotModified {
				t.Fatalf("read %d = %d, want 304", i+1, resp.StatusCode)
			}
		}
		resp := anon.Get(path)
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("read %d = %d, Retry-After %q; want 429 with Retry-After", share.PhotoBurst+1, resp.StatusCode, resp.Header.Get("Retry-After"))
		}
		if bytes.Contains([]byte(resp.Body), []byte("\xff\xd8\xff")) {
			t.Error("429 carries photo bytes")
		}
		// Another link's photos and the link's pages are not affected.
		other := createShare(t, w.owner, shareForm("label", "other"))
		if resp := anon.Get(photoPath(other, w.inRange, photo.SizeThumb)); resp.StatusCode != http.StatusOK {
			t.Errorf("another link's photo = %d, want 200", resp.StatusCode)
		}
		if resp := anon.Get("/s/" + w.valid); resp.StatusCode != http.StatusOK {
			t.Errorf("the link's page = %d, want 200", resp.StatusCode)
		}
		w.app.Clock.Advance(share.PhotoEvery)
		if resp := anon.Get(path); resp.StatusCode != http.StatusOK {
			t.Errorf("after waiting = %d, want 200", resp.StatusCode)
		}
	})
}

// lockedBuffer is a log destination the app's goroutines write to while
// the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestTokensNeverLogged: every kind of share request, served or refused,
// logs lines (the access log at least) and none holds a token.
func TestTokensNeverLogged(t *testing.T) {
	t.Parallel()
	var logs lockedBuffer
	w := newWorld(t, apptest.Options{Log: &logs})
	anon := w.app.Client()
	for _, p := range []string{
		"/s/" + w.valid, "/s/" + w.valid + "?from=2026-09-05", "/s/" + w.valid + "/week?start=2026-09-20",
		photoPath(w.valid, w.inRange, photo.SizeThumb), photoPath(w.valid, w.outOfRange, photo.SizeThumb),
		"/s/" + w.expired, "/s/" + w.revoked, "/s/" + w.unknown, "/s/" + w.valid + "/nothing",
	} {
		anon.Get(p)
		request(t, anon, w.app.URL, "GET", p, "User-Agent", "Slackbot 1.0")
	}
	for range share.MissBurst {
		anon.Get("/s/" + w.unknown) // into 429s
	}
	w.owner.Get("/shares/" + w.valid + "/qr.svg")
	w.owner.PostForm("/shares/"+w.unknown+"/revoke", nil)
	w.admin.Get("/admin/shares")
	w.owner.PostForm("/shares/"+w.valid+"/revoke", nil)
	anon.Get(photoPath(w.valid, w.inRange, photo.SizeThumb))

	out := logs.String()
	if !strings.Contains(out, `"route":"/s/{token}"`) || !strings.Contains(out, `"route":"/s/{token}/photo/{date}/{meal_id}"`) {
		t.Fatalf("no access log line for share routes; logs:\n%.2000s", out)
	}
	for _, tok := range []string{w.valid, w.expired, w.revoked, w.unknown} {
		if strings.Contains(out, tok) {
			t.Errorf("a token is in the logs:\n%s", out)
		}
	}
	for _, s := range []string{ownerEmail, otherEmail} {
		if strings.Contains(out, s) {
			t.Errorf("an email is in the logs")
		}
	}
}

// TestRecipientRefusalsLeadBack: a refusal under a link that opens (a day
// outside its range, a badly written day) leads back to the shared diary,
// not to the start page's sign-in; an unknown or expired link leads to
// the note saying what a shared diary link is.
func TestRecipientRefusalsLeadBack(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	anon := w.app.Client()
	for _, tc := range []struct {
		path   string
		status int
		back   string
	}{
		{"/s/" + w.valid + "?from=2026-09-20", http.StatusNotFound, "/s/" + w.valid},
		{"/s/" + w.valid + "?from=bad", http.StatusBadRequest, "/s/" + w.valid},
		{"/s/" + w.valid + "/week?start=2027-05-01", http.StatusNotFound, "/s/" + w.valid},
		{"/s/" + w.valid + "/week?start=tomorrow", http.StatusBadRequest, "/s/" + w.valid},
		{"/s/" + w.valid + "/photo/2026-09-02/235959-abcdef?v=000000000000", http.StatusNotFound, "/s/" + w.valid},
		{"/s/" + w.unknown, http.StatusNotFound, share.AboutPath},
		{"/s/" + w.expired, http.StatusGone, share.AboutPath},
	} {
		resp := anon.Get(tc.path)
		next := resp.Doc().Find(".error-next a")
		if href, _ := next.Attr("href"); resp.StatusCode != tc.status || href != tc.back {
			t.Errorf("GET %s = %d leading to %q (%q), want %d leading to %q", tc.path, resp.StatusCode, href, strings.TrimSpace(next.Text()), tc.status, tc.back)
		}
	}
}

// TestOpensWrittenLater: a recipient's page writes nothing (the open is
// counted in memory); the owner's list adds what is not written yet, and
// the server's Close writes it.
func TestOpensWrittenLater(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	owner := signUp(t, app, ownerEmail, ownerName)
	tok := createShare(t, owner, shareForm())
	recipient := app.Client()
	stored := func() int64 {
		t.Helper()
		sh, err := share.NewStore(app.Env.DynamoDB, app.Tables.Shares.Name, time.Now).Get(context.Background(), tok) // uncached
		if err != nil {
			t.Fatal(err)
		}
		return sh.Opens
	}

	app.Calls.Reset()
	if resp := recipient.Get("/s/" + tok); resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /s/{token} = %d", resp.StatusCode)
	}
	if n := app.Calls.Counts()["UpdateItem"]; n != 0 {
		t.Errorf("the recipient's page made %d UpdateItems, want none", n)
	}
	if got := stored(); got != 0 {
		t.Errorf("stored opens before any flush = %d, want 0", got)
	}
	if got := owner.Get("/shares").Doc().Find("li.share .open-count").Text(); got != "1" {
		t.Errorf("the owner's list shows %q opens, want 1", got)
	}

	recipient.Get("/s/" + tok)
	if err := app.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := stored(); got != 2 {
		t.Errorf("stored opens after Close = %d, want 2", got)
	}
}

// checkPreviewCard checks a page's Open Graph card: generic words and the
// app icon, nothing personal.
func checkPreviewCard(t *testing.T, app *apptest.App, doc *goquery.Document) {
	t.Helper()
	card := map[string]string{}
	doc.Find(`meta[property^="og:"]`).Each(func(_ int, s *goquery.Selection) { card[s.AttrOr("property", "")] = s.AttrOr("content", "") })
	if card["og:title"] != "A shared meal diary" || !strings.Contains(card["og:description"], "shared meal diary") && !strings.Contains(card["og:description"], "meal diary") {
		t.Errorf("og:title %q, og:description %q; want the generic words", card["og:title"], card["og:description"])
	}
	if img := card["og:image"]; !strings.HasPrefix(img, app.URL+"/static/icon-512.png?v=") {
		t.Errorf("og:image = %q, want the app icon's absolute URL", img)
	}
	for k, v := range card {
		for _, s := range []string{ownerName, ownerEmail, "Dr. Rossi", "2026", "/s/"} {
			if strings.Contains(v, s) {
				t.Errorf("%s = %q holds %q", k, v, s)
			}
		}
	}
}
