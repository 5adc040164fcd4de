package web

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/aws/smithy-go"

	"ndiro/internal/storage"
)

// TestStorageRefusedPage: a write storage refused, however the error
// reached the handler (a sentinel from a health check, a DynamoDB or S3
// API error wrapped by a store), is the 507 page saying the disk is full,
// with Retry-After; anything else stays what it was.
func TestStorageRefusedPage(t *testing.T) {
	apiErr := func(code string) error {
		return fmt.Errorf("meal: create: operation error DynamoDB: PutItem: %w", &smithy.GenericAPIError{Code: code, Message: "local dynamodb refused the write"})
	}
	const full, failed = "The server's disk is full", "The server cannot save anything"
	for _, tc := range []struct {
		name       string
		err        error
		status     int
		title      string
		retryAfter string
	}{
		{"health check: full", fmt.Errorf("local dynamodb: %w: %w", storage.ErrFull, errors.New("no space left on device")), 507, full, "30"},
		{"dynamodb refusal", apiErr(storage.FullCode), 507, full, "30"},
		{"s3 refusal", fmt.Errorf("photo: put: %w", &smithy.GenericAPIError{Code: storage.FullCode}), 507, full, "30"},
		{"disk failing", apiErr(storage.FailedCode), 507, failed, "30"},
		{"another API error", apiErr("ProvisionedThroughputExceededException"), 500, "Something went wrong", ""},
		{"a page error wrapping a refusal stays itself", &Error{Status: http.StatusForbidden, Msg: "No.", Err: storage.ErrFull}, 403, "Not allowed", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log syncBuffer
			p := testPages(t, &log)
			rec := httptest.NewRecorder()
			p.Handle(func(http.ResponseWriter, *http.Request) error { return tc.err })(rec, httptest.NewRequest(http.MethodPost, "/meals", nil))
			if rec.Code != tc.status {
				t.Fatalf("status = %d, want %d", rec.Code, tc.status)
			}
			if got := rec.Header().Get("Retry-After"); got != tc.retryAfter {
				t.Errorf("Retry-After = %q, want %q", got, tc.retryAfter)
			}
			doc, err := goquery.NewDocumentFromReader(rec.Body)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSpace(doc.Find("h1").Text()); got != tc.title {
				t.Errorf("heading = %q, want %q", got, tc.title)
			}
			if tc.status != 507 {
				return
			}
			msg := doc.Find("p").First().Text()
			for _, want := range []string{"Nothing was saved", "send it again", "can still be read"} {
				if !strings.Contains(msg, want) {
					t.Errorf("message = %q, want it to say %q", msg, want)
				}
			}
			if !strings.Contains(log.String(), "level=WARN msg=\"request refused: storage cannot take writes\" status=507") {
				t.Errorf("log = %q, want one warning for the refusal", log.String())
			}
		})
	}
}
