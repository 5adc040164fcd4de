package web

import (
	"net/http"
	"strings"
)

// NavLink is one link of the header's main navigation.
type NavLink struct {
	Href, Label string
	// Current is the link's aria-current value: "page" when the request is
	// that very page, "true" on another page of its section (a meal's
	// detail page is part of Diary), "" otherwise.
	Current string
}

// section is one entry of the main navigation and the routes that belong
// to it.
type section struct {
	href, label string
	admin       bool // shown to admins only
	// owns reports whether the route (chi pattern) and method belong here.
	owns func(method, route string) bool
}

// sections are the header's links in order. They match on the route
// pattern and method, not on the request path: a refused add form is
// answered by POST /meals, which must still read as Add, not Diary.
var sections = []section{
	{"/meals", "Diary", false, func(m, r string) bool {
		return strings.HasPrefix(r, "/meals") && !addRoute(m, r)
	}},
	{"/meals/new", "Add", false, addRoute},
	{"/shares", "Shares", false, func(_, r string) bool { return strings.HasPrefix(r, "/shares") }},
	{"/account", "Account", false, func(_, r string) bool { return strings.HasPrefix(r, "/account") }},
	{"/admin/users", "Admin", true, func(_, r string) bool { return strings.HasPrefix(r, "/admin") }},
}

// addRoute reports whether a route belongs to adding a meal: the form and
// its submission (which re-renders the form when it is refused).
func addRoute(method, route string) bool {
	return route == "/meals/new" || (route == "/meals" && method == http.MethodPost)
}

// mainNav returns the header's links for v on request r, with the link
// of r's section marked.
func mainNav(v Viewer, r *http.Request) []NavLink {
	route := RoutePattern(r)
	var nav []NavLink
	for _, s := range sections {
		if s.admin && !v.IsAdmin {
			continue
		}
		l := NavLink{Href: s.href, Label: s.label}
		if route != "" && s.owns(r.Method, route) {
			l.Current = "true"
			if r.Method == http.MethodGet && r.URL.Path == s.href {
				l.Current = "page"
			}
		}
		nav = append(nav, l)
	}
	return nav
}
