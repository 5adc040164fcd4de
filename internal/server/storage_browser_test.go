package server_test

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"ndiro/internal/apptest"
	"ndiro/internal/localenv"
	"ndiro/internal/storage"
)

// TestBrowserFullDiskKeepsTheForm sends the meal form, with a photo,
// through the page script while storage refuses writes: the page says the
// disk is full and that it tries again, and the form keeps what was typed
// and the photo chosen; nothing is saved.
func TestBrowserFullDiskKeepsTheForm(t *testing.T) {
	apptest.NeedBrowser(t)
	t.Parallel()
	ctx := apptest.Browser(t, 390, 844, 2*time.Minute)
	var full atomic.Bool
	app := apptest.New(t, apptest.Options{WriteHealth: func() error {
		if full.Load() {
			return fmt.Errorf("local dynamodb refuses writes: %w: %w", storage.ErrFull, errors.New("no space left on device"))
		}
		return nil
	}})
	const notes = "Soup, sent on a full disk"
	err := chromedp.Do(ctx,
		app.BrowserSignIn("admin@example.com"),
		chromedp.Navigate(app.URL+"/meals/new"),
		chromedp.WaitReady(chromedp.CSS(`#photo`)),
		chromedp.SetUploadFiles(chromedp.CSS(`#photo`), []string{apptest.PhotosDir(t) + "/small.jpg"}),
		chromedp.SendKeys(chromedp.CSS(`#notes`), notes),
	)
	if err != nil {
		t.Fatal(err)
	}
	full.Store(true)
	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`form.meal-form button[type=submit]`)),
		// Until the status line says so, or the form is gone (a page
		// written over it).
		chromedp.Poll[chromedp.Void](`!document.querySelector(".upload-text") || document.querySelector(".upload-text").textContent.includes("disk is full")`, chromedp.WithPollingTimeout(30*time.Second)),
	)
	if err != nil {
		t.Fatal(err)
	}
	status, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.querySelector(".upload-text") || document.body).textContent.trim()`))
	typed, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.querySelector("#notes") || {}).value || ""`))
	files, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`((document.querySelector("#photo") || {}).files || []).length`))
	if want := "Not saved: the server's disk is full. Everything you typed, and the photo, is still here; trying again in 30 s"; !strings.HasPrefix(status, want) {
		t.Errorf("status line = %q, want %q…", status, want)
	}
	if typed != notes || files != 1 {
		t.Errorf("form after the refusal: notes %q, %d photo chosen; want %q and 1", typed, files, notes)
	}
	if ms, err := app.Meals.All(ctx, localenv.Subject("admin@example.com")); err != nil || len(ms) != 0 {
		t.Errorf("meals after the refusal = %v, %v; want none", ms, err)
	}
}
