package share_test

import (
	"context"
	"encoding/xml"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/google/go-cmp/cmp"
	qrcode "github.com/yeqown/go-qrcode/v2"

	"ndiro/internal/apptest"
	"ndiro/internal/localenv"
	"ndiro/internal/share"
)

// TestCreateBadInput: each kind of bad input re-renders the form with 422,
// the input kept, a message on its field, and writes nothing.
func TestCreateBadInput(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	owner := signUp(t, app, ownerEmail, ownerName)
	for _, tc := range []struct {
		name, field, value string
		errField, msg      string
	}{
		{"empty label", "label", "", "label", "Give the link a label"},
		{"blank label", "label", "   ", "label", "Give the link a label"},
		{"label too long", "label", strings.Repeat("é", share.MaxLabel+1), "label", "at most 100 characters"},
		{"label with a line break", "label", "Dr.\nRossi", "label", "A label may not hold a line break (nor line breaks, control or invisible formatting characters); the field holds the label without them."},
		{"label with a bidi override", "label", "Dr. \u202eissoR", "label", "A label may not hold the text-direction character U+202E (right-to-left override) (nor line breaks, control or invisible formatting characters); the field holds the label without them."},
		{"label with an isolate", "label", "Dr. \u2066Rossi\u2069", "label", "A label may not hold the text-direction character U+2066 (left-to-right isolate) (nor line breaks, control or invisible formatting characters); the field holds the label without them."},
		{"label not UTF-8", "label", "Dr. R\xf6ssi", "label", "The label contained bytes that are not text; they were taken out of the field. Check the label and save again."},
		{"malformed first day", "from", "01/09/2026", "from", "real day written like 2026-09-01"},
		{"impossible first day", "from", "2026-02-30", "from", "real day"},
		{"first day before 1970", "from", "1969-12-31", "from", "between 1970 and 2999"},
		{"malformed last day", "to", "2026-9-14", "to", "real day written like 2026-09-14"},
		{"last day before first", "to", "2026-08-31", "to", "on or after the first day"},
		{"range of 367 days", "to", "2027-09-02", "to", "at most 366 days; this range has 367"},
		{"unknown expiry", "expiry", "14", "expiry", "never, or after 7, 30 or 90 days"},
		{"missing expiry", "expiry", "", "expiry", "never, or after 7, 30 or 90 days"},
		{"expiry not a number", "expiry", "forever", "expiry", "never, or after 7, 30 or 90 days"},
		{"notes not a checkbox", "notes", "yes", "notes", "Tick the box to show notes"},
		{"numbers not a checkbox", "numbers", "2", "numbers", "Tick the box to show numbers"},
		{"comments not a checkbox", "comments", "yes", "comments", "Tick the box to let them comment"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			form := shareForm()
			form.Set(tc.field, tc.value)
			app.Calls.Reset()
			resp := owner.PostForm("/shares", form)
			if resp.StatusCode != http.StatusUnprocessableEntity {
				t.Fatalf("POST /shares with %s = %d, want 422", tc.name, resp.StatusCode)
			}
			if n := app.Calls.Counts()["PutItem"]; n != 0 {
				t.Errorf("%d PutItem calls, want none", n)
			}
			doc := resp.Doc()
			if msg := doc.Find("#" + tc.errField + "-err").Text(); !strings.Contains(msg, tc.msg) {
				t.Errorf("message on %s = %q, want it to contain %q", tc.errField, msg, tc.msg)
			}
			if n := doc.Find(".field-err").Length(); n != 1 {
				t.Errorf("%d messages on the form, want 1", n)
			}
			if inv := doc.Find("#"+tc.errField).AttrOr("aria-invalid", ""); inv != "true" {
				t.Errorf("#%s aria-invalid = %q, want true", tc.errField, inv)
			}
			// The input is kept.
			if got := doc.Find("#label").AttrOr("value", ""); tc.field != "label" && got != "Dr. Rossi" {
				t.Errorf("label kept as %q, want Dr. Rossi", got)
			}
			if tc.field == "from" || tc.field == "to" {
				if got := doc.Find("#"+tc.field).AttrOr("value", ""); got != tc.value {
					t.Errorf("%s kept as %q, want %q", tc.field, got, tc.value)
				}
			}
			if doc.Find("#notes").AttrOr("checked", "none") == "none" && tc.field != "notes" {
				t.Error("notes box lost its tick")
			}
		})
	}
	all, err := app.Shares.ListByOwner(context.Background(), localenv.Subject(ownerEmail))
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 0 {
		t.Errorf("%d shares written by bad forms, want 0", len(all))
	}
	// The edges are accepted: one day, and exactly 366 days.
	for _, to := range []string{"2026-09-01", "2027-09-01"} {
		if resp := owner.PostForm("/shares", shareForm("to", to)); resp.StatusCode != http.StatusSeeOther {
			t.Errorf("range 2026-09-01..%s = %d, want 303", to, resp.StatusCode)
		}
	}
}

// TestCreateStoresWhatWasChosen: the form's choices reach the stored share
// and the list: range, what it shows, expiry from now.
func TestCreateStoresWhatWasChosen(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	owner := signUp(t, app, ownerEmail, ownerName)
	now := app.Clock.Now()
	for _, tc := range []struct {
		form     []string
		notes    bool
		numbers  bool
		expiry   time.Duration
		shows    string
		expState string
	}{
		{[]string{"expiry", "7", "numbers", ""}, true, false, 7 * 24 * time.Hour, "photos and notes", "active"},
		{[]string{"expiry", "90", "notes", "", "numbers", "on"}, false, true, 90 * 24 * time.Hour, "photos and numbers", "active"},
		{[]string{"expiry", "never", "notes", "", "numbers", ""}, false, false, 0, "photos only", "active"},
	} {
		tok := createShare(t, owner, shareForm(tc.form...))
		if sh, _ := app.Shares.Get(context.Background(), tok); sh.Comments {
			t.Errorf("form %v made a link that takes comments", tc.form)
		}
		app.Clock.Advance(time.Second) // created one after another
		sh, err := app.Shares.Get(context.Background(), tok)
		if err != nil {
			t.Fatal(err)
		}
		var wantExp int64
		if tc.expiry > 0 {
			wantExp = now.Add(tc.expiry).Unix()
		}
		now = now.Add(time.Second)
		if sh.Notes != tc.notes || sh.Numbers != tc.numbers || sh.ExpiresAt != wantExp || sh.From != "2026-09-01" || sh.To != "2026-09-14" || sh.Label != "Dr. Rossi" {
			t.Errorf("form %v stored %+v; want notes %v numbers %v expires %d", tc.form, sh, tc.notes, tc.numbers, wantExp)
		}
		row := owner.Get("/shares").Doc().Find("#share-" + tok[:8])
		if got := row.Find(".shows").Text(); got != tc.shows {
			t.Errorf("list says it shows %q, want %q", got, tc.shows)
		}
		if got := row.AttrOr("data-state", ""); got != tc.expState {
			t.Errorf("state = %q, want %q", got, tc.expState)
		}
		if got := row.Find("form").AttrOr("data-confirm", ""); !strings.Contains(got, "Revoke") {
			t.Errorf("revoke form data-confirm = %q, want a confirmation", got)
		}
	}
	// Comments: stored, and said on the list.
	tok := createShare(t, owner, shareForm("comments", "on"))
	if sh, err := app.Shares.Get(context.Background(), tok); err != nil || !sh.Comments {
		t.Errorf("comments=on stored %+v, %v; want a link that takes comments", sh, err)
	}
	if got := strings.TrimSpace(owner.Get("/shares").Doc().Find("#share-" + tok[:8] + " .comments-state").Text()); !strings.HasPrefix(got, "Comments on") {
		t.Errorf("list says %q, want Comments on", got)
	}
	if got := strings.TrimSpace(owner.Get("/shares").Doc().Find("li.share").Last().Find(".comments-state").Text()); got != "Comments off" {
		t.Errorf("list says %q for a link without comments, want Comments off", got)
	}
	// A week later the 7-day link is listed as expired, without its link.
	app.Clock.Advance(7*24*time.Hour + time.Minute)
	var states []string
	owner.Get("/shares").Doc().Find("li.share").Each(func(_ int, s *goquery.Selection) {
		states = append(states, s.AttrOr("data-state", "")+fmt.Sprint(s.Find("input.copy").Length()))
	})
	if d := cmp.Diff([]string{"active1", "active1", "active1", "expired0"}, states); d != "" { // newest first
		t.Errorf("states and link fields, newest first (-want +got):\n%s", d)
	}
}

// TestQRCode: the owner's QR code is an SVG that holds nothing but the
// code, and its modules are exactly the QR code of the link.
func TestQRCode(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	owner := signUp(t, app, ownerEmail, ownerName)
	tok := createShare(t, owner, shareForm())
	img := owner.Get("/shares").Doc().Find("#share-"+tok[:8]+" details.qr img").AttrOr("src", "")
	if img != "/shares/"+tok+"/qr.svg" {
		t.Fatalf("QR image src = %q", img)
	}
	resp := owner.Get(img)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "image/svg+xml" {
		t.Fatalf("QR = %d %q, want 200 image/svg+xml", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var svg struct {
		ViewBox string `xml:"viewBox,attr"`
		Path    struct {
			D string `xml:"d,attr"`
		} `xml:"path"`
	}
	if err := xml.Unmarshal([]byte(resp.Body), &svg); err != nil {
		t.Fatalf("QR is not SVG: %v", err)
	}
	if strings.Contains(resp.Body, "<script") || strings.Contains(resp.Body, "href") {
		t.Error("QR SVG holds a script or a link")
	}
	// Read the modules back from the path and compare with the code of
	// the link, built independently. The library scores its 8 masks in
	// goroutines and breaks a tie by which finishes first, so a code
	// with two best masks comes out either way: build it until one
	// matches.
	build := func() bitmap {
		t.Helper()
		q, err := qrcode.NewWith(app.URL+"/s/"+tok, qrcode.WithErrorCorrectionLevel(qrcode.ErrorCorrectionMedium))
		if err != nil {
			t.Fatal(err)
		}
		var b bitmap
		if err := q.Save(&b); err != nil {
			t.Fatal(err)
		}
		return b
	}
	want := build()
	n := len(want.bits) + 8
	if svg.ViewBox != fmt.Sprintf("0 0 %d %d", n, n) {
		t.Errorf("viewBox = %q, want a %d-module square with a 4-module quiet zone", svg.ViewBox, n)
	}
	got := make([][]bool, len(want.bits))
	for i := range got {
		got[i] = make([]bool, len(want.bits))
	}
	for _, m := range regexp.MustCompile(`M(\d+) (\d+)h(\d+)v1h-(\d+)z`).FindAllStringSubmatch(svg.Path.D, -1) {
		x, _ := strconv.Atoi(m[1])
		y, _ := strconv.Atoi(m[2])
		run, _ := strconv.Atoi(m[3])
		for i := range run {
			got[y-4][x-4+i] = true
		}
	}
	for range 200 {
		if cmp.Equal(want.bits, got) {
			break
		}
		want = build()
	}
	if d := cmp.Diff(want.bits, got); d != "" {
		t.Errorf("QR modules differ from the link's code (-want +got):\n%s", d)
	}
}

type bitmap struct{ bits [][]bool }

func (b *bitmap) Write(m qrcode.Matrix) error { b.bits = m.Bitmap(); return nil }
func (b *bitmap) Close() error                { return nil }

// TestAdminShares: the admin list shows every owner's links with the
// owner's email, range, state and opens, never the label (only the owner
// sees who a link is for), and its revoke works.
func TestAdminShares(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	if err := w.app.Users.SetTimeZone(context.Background(), localenv.Subject(ownerEmail), "Asia/Tokyo"); err != nil {
		t.Fatal(err)
	}
	w.app.Client().Get("/s/" + w.valid)
	w.app.Client().Get("/s/" + w.valid)
	otherTok := createShare(t, w.other, shareForm("label", "Coach Kim"))
	doc := w.admin.Get("/admin/shares").Doc()
	// Times in the owner's zone, named.
	if got := strings.TrimSpace(doc.Find("#share-" + w.valid[:8] + " .last-opened").Text()); !strings.HasSuffix(got, " JST") {
		t.Errorf("last opened on the admin list = %q, want it in the owner's zone (JST)", got)
	}
	if doc.Find(`nav.tabs a[href="/admin/shares"][aria-current=page]`).Length() != 1 {
		t.Error("admin nav does not mark Shares")
	}
	type row struct{ Owner, Range, State, Opens string }
	read := func(tok string) row {
		r := doc.Find("#share-" + tok[:8])
		txt := func(sel string) string { return strings.TrimSpace(r.Find(sel).Text()) }
		return row{txt(".owner"), txt(".range"), txt(".state"), txt(".opens")}
	}
	for tok, want := range map[string]row{
		w.valid:   {ownerEmail, "1 Sep – 14 Sep 2026", "active", "2"},
		w.expired: {ownerEmail, "1 Sep – 14 Sep 2026", "expired", "0"},
		otherTok:  {otherEmail, "1 Sep – 14 Sep 2026", "active", "0"},
	} {
		if d := cmp.Diff(want, read(tok)); d != "" {
			t.Errorf("admin row (-want +got):\n%s", d)
		}
	}
	if html, _ := doc.Html(); strings.Contains(html, "Coach Kim") || strings.Contains(html, "Dr. Rossi") {
		t.Error("the admin list shows a share's label")
	}
	if n := doc.Find("tbody tr").Length(); n != 4 {
		t.Errorf("admin list has %d rows, want 4 (valid, commenting, expired, the other owner's; the revoked link is gone)", n)
	}
	if resp := w.admin.PostForm("/admin/shares/"+otherTok+"/revoke", nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("admin revoke = %d, want 303", resp.StatusCode)
	}
	if resp := w.app.Client().Get("/s/" + otherTok); resp.StatusCode != http.StatusNotFound {
		t.Errorf("link after the admin's revoke = %d, want 404", resp.StatusCode)
	}
}

// TestMainNavigation: the owner's navigation links to the share pages.
func TestMainNavigation(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	owner := signUp(t, app, ownerEmail, ownerName)
	doc := owner.Get("/shares").Doc()
	if doc.Find(`nav[aria-label=Main] a[href="/shares"][aria-current=page]`).Length() != 1 {
		t.Error("main navigation has no current Shares link on /shares")
	}
	if doc.Find(`nav[aria-label=Main] a[href="/shares"]`).Length() != 1 {
		t.Error("main navigation has no Shares link")
	}
}

// TestCreateFormDefaults: the form offers the last 14 days ending today in
// the owner's time zone, not the server's.
func TestCreateFormDefaults(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	owner := signUp(t, app, ownerEmail, ownerName)
	// 11:30 UTC on 1 Sep is already 2 Sep in Kiritimati (UTC+14).
	app.Clock.Set(time.Date(2026, 9, 1, 11, 30, 0, 0, time.UTC))
	if resp := owner.PostForm("/account/timezone", map[string][]string{"tz": {"Pacific/Kiritimati"}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("set time zone = %d", resp.StatusCode)
	}
	doc := owner.Get("/shares").Doc()
	got := []string{doc.Find("#from").AttrOr("value", ""), doc.Find("#to").AttrOr("value", ""), doc.Find("#expiry option[selected]").AttrOr("value", "")}
	if d := cmp.Diff([]string{"2026-08-20", "2026-09-02", "30"}, got); d != "" {
		t.Errorf("form defaults from, to, expiry (-want +got):\n%s", d)
	}
	if doc.Find("#notes[checked]").Length() != 1 || doc.Find("#numbers[checked]").Length() != 1 {
		t.Error("notes and numbers are not ticked by default")
	}
	if box := doc.Find("input#comments[name=comments][type=checkbox]"); box.Length() != 1 || box.Is("[checked]") || !strings.Contains(box.Parent().Text(), "Let them comment") {
		t.Error(`the form's "Let them comment" box is missing or ticked by default`)
	}
}
