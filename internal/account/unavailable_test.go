package account_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"testing"
	"time"

	"ndiro/internal/apptest"
	"ndiro/internal/localenv"
	"ndiro/internal/user"
)

// TestDeletionWhoseMarkGotNoAnswer: the write that marks the account
// deleting reaches DynamoDB, which applies it, and its answer never comes
// back. The person gets the 503 page, and the deletion goes on by itself
// once DynamoDB answers again: the account is not left refused
// everywhere with no run to finish it.
func TestDeletionWhoseMarkGotNoAnswer(t *testing.T) {
	t.Parallel()
	faults := &apptest.Faults{}
	app := apptest.New(t, apptest.Options{Faults: faults, Links: true, Env: map[string]string{"NDIRO_STORAGE_ITEM_TIMEOUT": "600ms", "NDIRO_STORAGE_ATTEMPTS": "2"}})
	app.Deletions.SetRetry(20, 50*time.Millisecond)
	admin := app.Client()
	admin.SignIn(adminEmail)
	victim := app.Client()
	if r := victim.SignInVia("/login?invite="+admin.CreateInvite(url.Values{"role": {"owner"}}), victimEmail); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("victim sign-up = %d", r.StatusCode)
	}
	id := localenv.Subject(victimEmail)

	held, release := faults.Hold("UpdateItem", app.Tables.Users.Name)
	defer release()
	done := make(chan *apptest.Response, 1)
	go func() { done <- victim.PostForm("/account/delete", url.Values{"email": {victimEmail}}) }()
	<-held
	app.DynamoLink.StallAnswers()
	release()
	resp := <-done
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("deletion whose mark got no answer = %d, want 503", resp.StatusCode)
	}
	app.DynamoLink.Restore()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := app.Deletions.Wait(ctx, id); err != nil {
		t.Fatal(err)
	}
	db := localenv.NewDynamoClient(app.Env.DynamoEndpoint)
	if _, err := user.NewStore(db, app.Tables.Users.Name, time.Now).Get(ctx, id); !errors.Is(err, user.ErrNotFound) {
		t.Errorf("users row after the deletion ran: %v, want it gone", err)
	}
}
