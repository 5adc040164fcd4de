package meal_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"ndiro/internal/apptest"
	"ndiro/internal/localenv"
)

// BenchmarkMonthPage renders a month of 90 meals through the whole handler
// stack: session, guard GetItem, one Query against the in-process emulator,
// grouping and the template. Allocations include the emulator's, which runs
// in the same process.
func BenchmarkMonthPage(b *testing.B) {
	app := apptest.New(b)
	c := app.Client()
	c.SignIn(admin)
	owner := localenv.Subject(admin)
	var items []map[string]types.AttributeValue
	for i := 0; i < 90; i++ {
		items = append(items, mealItem(owner, fmt.Sprintf("2026-09-%02d", i%30+1), fmt.Sprintf("%02d%02d00-%06x", 6+i/30*6, i%60, i)))
	}
	batchPut(b, app, items)

	u, _ := url.Parse(app.URL)
	req := httptest.NewRequest(http.MethodGet, "/meals?month=2026-09", nil)
	for _, ck := range c.HTTP.Jar.Cookies(u) {
		req.AddCookie(ck)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		rec := httptest.NewRecorder()
		app.Handler.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d", rec.Code)
		}
	}
}
