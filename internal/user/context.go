package user

import "context"

type ctxKey struct{}

// WithUser returns ctx carrying u, the signed-in user the guard loaded.
func WithUser(ctx context.Context, u *User) context.Context {
	return context.WithValue(ctx, ctxKey{}, u)
}

// FromContext returns the signed-in user, or nil outside the guard.
func FromContext(ctx context.Context) *User {
	u, _ := ctx.Value(ctxKey{}).(*User)
	return u
}

// ID returns the signed-in user's ID, or "" outside the guard.
func ID(ctx context.Context) string {
	if u := FromContext(ctx); u != nil {
		return u.ID
	}
	return ""
}
