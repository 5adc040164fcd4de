package server_test

import (
	"context"
	"image/color"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"ndiro/internal/apptest"
	"ndiro/internal/localenv"
	"ndiro/internal/user"
)

const cacheOwner = "cached@example.com"

// cacheWorld is an app with an admin and an owner who has a meal with a
// photo and a share link, every one of them opened once, so the owner's
// users row and the share are in the stores' caches before each test
// changes them.
type cacheWorld struct {
	app           *apptest.App
	faults        *apptest.Faults
	admin, owner  *apptest.Client
	id            string
	thumb, share  string
	sharePhotoURL string
}

func newCacheWorld(t *testing.T) *cacheWorld {
	t.Helper()
	faults := &apptest.Faults{}
	app := apptest.New(t, apptest.Options{Faults: faults})
	w := &cacheWorld{app: app, faults: faults, admin: app.Client(), owner: app.Client(), id: localenv.Subject(cacheOwner)}
	w.admin.SignIn("admin@example.com")
	w.owner.SignInVia("/login?invite="+w.admin.CreateInvite(url.Values{"role": {"owner"}}), cacheOwner)
	form := url.Values{"date": {"2026-09-01"}, "time": {"12:30"}, "kind": {"lunch"}}
	if r := w.owner.PostMultipart("/meals", form, apptest.File{Field: "photo", Name: "p.jpg", Body: apptest.JPEG(t, 64, 48, color.RGBA{R: 200})}); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("add meal = %d", r.StatusCode)
	}
	ms, err := app.Meals.All(t.Context(), w.id)
	if err != nil || len(ms) != 1 {
		t.Fatalf("meals = %v, %v", ms, err)
	}
	w.thumb = ms[0].ThumbURL()
	w.share = w.owner.CreateShare(url.Values{"label": {"x"}, "from": {"2026-09-01"}, "to": {"2026-09-02"}, "expiry": {"never"}})
	w.sharePhotoURL = strings.Replace(w.thumb, "/photo/", "/s/"+w.share+"/photo/", 1)
	for _, p := range []string{"/meals", w.thumb, "/admin/users"} {
		w.owner.Get(p)
	}
	if r := app.Client().Get(w.sharePhotoURL); r.StatusCode != http.StatusOK {
		t.Fatalf("shared photo = %d", r.StatusCode)
	}
	// Warm: the guard and the recipient path read no table.
	app.Calls.Reset()
	if r := w.owner.Get(w.thumb); r.StatusCode != http.StatusOK {
		t.Fatalf("photo = %d", r.StatusCode)
	}
	if r := app.Client().Get(w.sharePhotoURL); r.StatusCode != http.StatusOK {
		t.Fatalf("shared photo = %d", r.StatusCode)
	}
	if n := app.Calls.Counts()["GetItem"]; n != 0 {
		t.Fatalf("warm owner photo and shared photo made %d GetItems, want 0 (rows cached)", n)
	}
	return w
}

// wantLogin checks that c's GET path is sent to sign in (303 to /login).
func wantLogin(t *testing.T, c *apptest.Client, path string) {
	t.Helper()
	if r := c.Get(path); r.StatusCode != http.StatusSeeOther || !strings.HasPrefix(r.Location(), "/login") {
		t.Errorf("GET %s = %d %q, want 303 to /login", path, r.StatusCode, r.Location())
	}
}

// TestWritesReachTheNextRequest: with the owner's users row and the share
// cached, each write through the app (deletion mark, disable, role change,
// revoke, share creation) decides the very next request, with the clock
// standing still, so no TTL can have lapsed.
func TestWritesReachTheNextRequest(t *testing.T) {
	t.Parallel()
	t.Run("deletion mark", func(t *testing.T) {
		t.Parallel()
		w := newCacheWorld(t)
		second := w.app.Client()
		second.SignIn(cacheOwner)
		held, release := w.faults.Hold("ListObjectsV2", "test-photos")
		defer release()
		if r := w.admin.PostForm("/admin/users/"+url.PathEscape(w.id)+"/delete", url.Values{"email": {cacheOwner}}); r.StatusCode != http.StatusSeeOther {
			t.Fatalf("admin delete = %d", r.StatusCode)
		}
		select { // marked deleting, held at the photos step
		case <-held:
		case <-time.After(time.Minute):
			t.Fatal("the deletion never reached the photos step")
		}
		wantLogin(t, second, "/meals")
		wantLogin(t, w.owner, w.thumb)
		if r := w.app.Client().Get(w.sharePhotoURL); r.StatusCode != http.StatusNotFound {
			t.Errorf("shared photo of an account being deleted = %d, want 404", r.StatusCode)
		}
	})
	t.Run("disable", func(t *testing.T) {
		t.Parallel()
		w := newCacheWorld(t)
		if r := w.admin.PostForm("/admin/users/"+url.PathEscape(w.id)+"/disable", nil); r.StatusCode != http.StatusSeeOther {
			t.Fatalf("disable = %d", r.StatusCode)
		}
		wantLogin(t, w.owner, w.thumb)
		if r := w.app.Client().Get(w.sharePhotoURL); r.StatusCode != http.StatusNotFound {
			t.Errorf("shared photo of a disabled account = %d, want 404", r.StatusCode)
		}
	})
	t.Run("role change", func(t *testing.T) {
		t.Parallel()
		w := newCacheWorld(t)
		role := func(r string) {
			if resp := w.admin.PostForm("/admin/users/"+url.PathEscape(w.id)+"/role", url.Values{"role": {r}}); resp.StatusCode != http.StatusSeeOther {
				t.Fatalf("role %s = %d", r, resp.StatusCode)
			}
		}
		role("admin")
		if r := w.owner.Get("/admin/users"); r.StatusCode != http.StatusOK {
			t.Errorf("made admin: /admin/users = %d, want 200", r.StatusCode)
		}
		role("owner")
		if r := w.owner.Get("/admin/users"); r.StatusCode != http.StatusForbidden {
			t.Errorf("made owner again: /admin/users = %d, want 403", r.StatusCode)
		}
	})
	t.Run("revoke", func(t *testing.T) {
		t.Parallel()
		w := newCacheWorld(t)
		if r := w.owner.PostForm("/shares/"+w.share+"/revoke", nil); r.StatusCode != http.StatusSeeOther {
			t.Fatalf("revoke = %d", r.StatusCode)
		}
		for _, p := range []string{w.sharePhotoURL, "/s/" + w.share} {
			if r := w.app.Client().Get(p); r.StatusCode != http.StatusNotFound {
				t.Errorf("GET %s after revoke = %d, want 404", strings.Replace(p, w.share, "{token}", 1), r.StatusCode)
			}
		}
	})
}

// TestEditOutsideTheAppLapses: a users row changed behind the app's back
// (the console) is served from the cache until user.CacheTTL has passed,
// then the change holds.
func TestEditOutsideTheAppLapses(t *testing.T) {
	t.Parallel()
	w := newCacheWorld(t)
	_, err := w.app.Env.DynamoDB.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName:                 aws.String(w.app.Tables.Users.Name),
		Key:                       map[string]types.AttributeValue{"user_id": &types.AttributeValueMemberS{Value: w.id}},
		UpdateExpression:          aws.String("SET #s = :s"),
		ExpressionAttributeNames:  map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":s": &types.AttributeValueMemberS{Value: string(user.StatusDisabled)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if r := w.owner.Get(w.thumb); r.StatusCode != http.StatusOK {
		t.Errorf("photo within the TTL = %d, want 200 from the cached row", r.StatusCode)
	}
	w.app.Clock.Advance(user.CacheTTL)
	wantLogin(t, w.owner, w.thumb)
}
