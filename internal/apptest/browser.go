package apptest

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromiumPath finds Debian's Chromium, or skips the test saying how to
// get it (`.ci/run` installs it).
func chromiumPath(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("Chromium not found; install it with: apt-get install -y chromium")
	return ""
}

// BrowserEnv is the environment variable that runs the browser tests
// (every TestBrowser…): set to 1 by make browser, which CI runs after
// make test. Chromium under the race detector costs make test more CPU
// than the rest of the suite, so without it the tests skip, saying so.
const BrowserEnv = "NDIRO_TEST_BROWSER"

// NeedBrowser skips t unless the browser tests run (BrowserEnv is 1, not
// under -short, Chromium installed) and returns Chromium's path. A
// browser test calls it (or Browser) before anything else, so that a
// skipped test sets nothing up.
func NeedBrowser(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("drives a browser")
	}
	if os.Getenv(BrowserEnv) != "1" {
		t.Skip("drives a browser: run by make browser (" + BrowserEnv + "=1)")
	}
	return chromiumPath(t)
}

// Browser starts headless Chromium with a window of width×height CSS
// pixels, and extra options if any (e.g. a colour profile), and returns a
// chromedp context for it, ended with the test (and after timeout at the
// latest). It skips the test as NeedBrowser does.
func Browser(t testing.TB, width, height int, timeout time.Duration, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	path := NeedBrowser(t)
	opts := append([]chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		// The machine has no network: no background fetches.
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(width, height),
	}, extra...)
	alloc, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancel2 := chromedp.NewContext(alloc)
	t.Cleanup(cancel2)
	ctx, cancel3 := context.WithTimeout(ctx, timeout)
	t.Cleanup(cancel3)
	return ctx
}

// BrowserSignIn signs the browser in as email through the local sign-in
// page and waits for the page it lands on.
func (a *App) BrowserSignIn(email string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(
		chromedp.Navigate(a.URL+"/login"),
		chromedp.WaitVisible(chromedp.CSS(`#email`)),
		chromedp.SendKeys(chromedp.CSS(`#email`), email),
		chromedp.Submit(chromedp.CSS(`#email`)),
		chromedp.WaitVisible(chromedp.CSS(`main h1`)),
	)
}
