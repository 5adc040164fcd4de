package user

import (
	"context"
	"strings"
	"testing"
)

func TestCleanName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"Ana Lima", "Ana Lima", true},
		{"  Ana  ", "Ana", true},
		{"", "", true},
		{"José Ñúñez 李", "José Ñúñez 李", true},
		{strings.Repeat("é", MaxNameLen), strings.Repeat("é", MaxNameLen), true},
		{strings.Repeat("é", MaxNameLen+1), "", false},
		{"Ana\nLima", "", false},
		{"Ana\tLima", "", false},
		{"Ana\u202eLima", "", false},
		{"Ana\u200bLima", "", false},
		{"An\xe1", "", false},
	} {
		got, ok := CleanName(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("CleanName(%q) = %q, %v, want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestLocationAndTimeZones(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		tz, want string
	}{{"", "UTC"}, {"Europe/Berlin", "Europe/Berlin"}, {"Mars/Olympus", "UTC"}} {
		u := &User{TimeZone: tc.tz}
		if got := u.Location().String(); got != tc.want {
			t.Errorf("Location of %q = %s, want %s", tc.tz, got, tc.want)
		}
	}
	for _, tc := range []struct {
		tz string
		ok bool
	}{
		{"Europe/Berlin", true}, {"UTC", true}, {"America/Argentina/Buenos_Aires", true},
		{"", false}, {"Local", false}, {"Mars/Olympus", false}, {"/etc/localtime", false},
		{"../../etc/passwd", false}, {"Europe/" + strings.Repeat("x", 60), false},
	} {
		if got := ValidTimeZone(tc.tz); got != tc.ok {
			t.Errorf("ValidTimeZone(%q) = %v, want %v", tc.tz, got, tc.ok)
		}
	}
}

func TestRolesAndStatuses(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"owner", "admin"} {
		if r, err := ParseRole(s); err != nil || string(r) != s {
			t.Errorf("ParseRole(%q) = %q, %v", s, r, err)
		}
	}
	for _, s := range []string{"", "Admin", "root"} {
		if _, err := ParseRole(s); err == nil {
			t.Errorf("ParseRole(%q) = nil error, want one", s)
		}
	}
	for _, tc := range []struct {
		u                                 User
		admin, active, disabled, deleting bool
	}{
		{User{Role: RoleAdmin, Status: StatusActive}, true, true, false, false},
		{User{Role: RoleOwner}, false, true, false, false},
		{User{Role: RoleOwner, Status: StatusDisabled}, false, false, true, false},
		{User{Role: RoleAdmin, Status: StatusDeleting}, true, false, false, true},
		{User{Role: RoleOwner, Status: "paused"}, false, false, false, false},
	} {
		u := tc.u
		if u.IsAdmin() != tc.admin || u.Active() != tc.active || u.Disabled() != tc.disabled || u.Deleting() != tc.deleting {
			t.Errorf("%+v: admin %v active %v disabled %v deleting %v, want %v %v %v %v", u,
				u.IsAdmin(), u.Active(), u.Disabled(), u.Deleting(), tc.admin, tc.active, tc.disabled, tc.deleting)
		}
	}
}

func TestContext(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	if FromContext(ctx) != nil || ID(ctx) != "" {
		t.Error("a context without a user carries one")
	}
	u := &User{ID: "u1"}
	ctx = WithUser(ctx, u)
	if FromContext(ctx) != u || ID(ctx) != "u1" {
		t.Errorf("FromContext = %v, ID = %q, want the user put in", FromContext(ctx), ID(ctx))
	}
}
