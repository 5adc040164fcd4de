package user

import (
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
