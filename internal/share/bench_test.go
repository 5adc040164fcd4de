package share_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"testing"
	"time"

	"ndiro/internal/apptest"
	"ndiro/internal/localenv"
	"ndiro/internal/meal"
	"ndiro/internal/photo"
	"ndiro/internal/share"
)

func TestMain(m *testing.M) {
	photo.MaybeHEICWorker() // the WebP worker of BenchmarkRecipientPhoto
	os.Exit(m.Run())
}

// BenchmarkRecipientPhoto serves a cached photo to a share link's
// recipient through the whole stack (security headers, routes, the
// token's lookup and scope, cache, ETag, Cache-Control: no-cache), the
// thumbnail and the display copy of phone-portrait.jpg and the sized
// copies a recipient's pages fetch (t240 and d1080, JPEG and WebP), as
// 200 and as 304, alternating request by request with a bare
// http.ServeContent handler serving the same bytes with the same ETag, as
// BenchmarkOwnerPhoto does for the owner; the app's clock moves on by
// PhotoEvery before each request, so the link's photo allowance never
// runs out. It reports recipient-ns and
// bare-ns (each's time per request), x-bare (bare time ÷ recipient time,
// the median over batches of 64 pairs) and recipient-allocs.
func BenchmarkRecipientPhoto(b *testing.B) {
	const ratioBatch = 64
	app := apptest.New(b, apptest.Options{Log: io.Discard})
	owner := signUp(b, app, ownerEmail, ownerName)
	m := addMeal(b, app, owner, ownerEmail, "2026-09-02", "12:30", "lunch", apptest.Photo(b, "phone-portrait.jpg"))
	tok := createShare(b, owner, shareForm())
	sized := giveCopies(b, app, &m, "t240.jpg", "t240.webp", "d1080.jpg", "d1080.webp")
	recipient := app.Client()
	base := "/s/" + tok + "/photo/" + m.Date + "/" + m.ID + "?v=" + m.PhotoV.Tag()
	copies := []struct{ name, url, etag string }{
		{"thumb", base + "&size=thumb", `"` + m.PhotoV.Tag() + `-thumb"`},
		{"display", base, `"` + m.PhotoV.Tag() + `-display"`},
	}
	for _, size := range sized {
		copies = append(copies, struct{ name, url, etag string }{string(size), base + "&size=" + string(size), `"` + m.PhotoV.Tag() + "-" + string(size) + `"`})
	}
	for _, cp := range copies {
		first := recipient.Get(cp.url) // now cached
		if first.StatusCode != http.StatusOK || first.Header.Get("ETag") != cp.etag {
			b.Fatalf("%s = %d, ETag %s; want 200, %s", cp.url, first.StatusCode, first.Header.Get("ETag"), cp.etag)
		}
		body, ctype := []byte(first.Body), first.Header.Get("Content-Type")
		bare := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", ctype)
			w.Header().Set("ETag", cp.etag)
			http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
		})
		for _, tc := range []struct {
			name string
			inm  string
			want int
		}{{"200", "", http.StatusOK}, {"304", cp.etag, http.StatusNotModified}} {
			req := httptest.NewRequest(http.MethodGet, cp.url, nil)
			if tc.inm != "" {
				req.Header.Set("If-None-Match", tc.inm)
			}
			b.Run(cp.name+"-"+tc.name, func(b *testing.B) {
				w := &apptest.Sink{}
				serve := func(h http.Handler) time.Duration {
					w.Reset()
					// The link's photo allowance refilled by one, off the
					// clock: the benchmark is not a flood.
					app.Clock.Advance(share.PhotoEvery)
					start := time.Now()
					h.ServeHTTP(w, req)
					d := time.Since(start)
					if w.Code != tc.want {
						b.Fatalf("status %d, want %d", w.Code, tc.want)
					}
					return d
				}
				allocs := testing.AllocsPerRun(100, func() { serve(app.Handler) })
				var rcpt, plain, batchRcpt, batchPlain time.Duration
				var ratios []float64
				i := 0
				for b.Loop() {
					p, o := serve(bare), serve(app.Handler)
					plain, rcpt = plain+p, rcpt+o
					batchPlain, batchRcpt = batchPlain+p, batchRcpt+o
					if i++; i%ratioBatch == 0 {
						ratios = append(ratios, float64(batchPlain)/float64(batchRcpt))
						batchPlain, batchRcpt = 0, 0
					}
				}
				n := float64(b.N)
				b.ReportMetric(float64(rcpt.Nanoseconds())/n, "recipient-ns")
				b.ReportMetric(float64(plain.Nanoseconds())/n, "bare-ns")
				if len(ratios) == 0 {
					ratios = append(ratios, float64(plain)/float64(rcpt))
				}
				slices.Sort(ratios)
				b.ReportMetric(ratios[len(ratios)/2], "x-bare")
				b.ReportMetric(allocs, "recipient-allocs")
			})
		}
	}
}

// giveCopies makes m's sized copies of sizes as the variant job does
// (photo.Pipeline.MakeVariants from the stored display copy, put under
// the photo's version, recorded with Store.RecordSet) and returns sizes.
func giveCopies(b *testing.B, app *apptest.App, m *meal.Meal, sizes ...photo.Size) []photo.Size {
	b.Helper()
	ctx := context.Background()
	enc := photo.NewWebPEncoder(nil, photo.WebPLimits(), time.Minute, slog.New(slog.DiscardHandler))
	b.Cleanup(func() { enc.Close() })
	p := photo.NewPipeline(photo.DefaultBudget, time.Minute).WithWebP(enc)
	store := photo.NewStore(app.Env.S3, "test-photos")
	display, err := store.Get(ctx, localenv.Subject(ownerEmail), photo.Key(m.UserID, m.Date, m.ID, photo.SizeDisplay))
	if err != nil {
		b.Fatal(err)
	}
	want := photo.SetOf(sizes...)
	made, err := p.MakeVariants(ctx, display.Body, want)
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range sizes {
		if err := store.Put(ctx, photo.Key(m.UserID, m.Date, m.ID, s), made[s], m.PhotoV); err != nil {
			b.Fatal(err)
		}
	}
	if err := app.Meals.RecordSet(ctx, m, m.PhotoSet.Of()|want); err != nil {
		b.Fatal(err)
	}
	return sizes
}
