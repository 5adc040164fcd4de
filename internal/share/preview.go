package share

import (
	"net/http"
	"strings"
)

// previewAgents are substrings (lower-case) of the User-Agent of link
// preview fetchers (chat apps unfurling a pasted link) and crawlers. They
// get a page with nothing personal and are not counted as opens. Only
// names of fetchers, never of apps whose built-in browser a recipient may
// open the link in (Teams, Snapchat, Mattermost …), which would then show
// nothing. Sec-Fetch headers are not used: older browsers on clinic PCs do
// not send them.
var previewAgents = []string{
	"slackbot", "slack-imgproxy", "facebookexternalhit", "facebot", "twitterbot",
	"whatsapp", "telegrambot", "discordbot", "linkedinbot", "skypeuripreview",
	"microsoftpreview", "applebot", "googlebot", "google-pagerenderer",
	"bingbot", "bingpreview", "duckduckbot", "yandexbot", "baiduspider",
	"redditbot", "embedly", "iframely", "vkshare", "cardyb", "mastodon",
}

// isPreview reports whether r is a look at the link rather than a person
// opening it: any HEAD request, or a known link-preview or crawler user
// agent. Such requests see no photos, notes or name and are not counted.
func isPreview(r *http.Request) bool {
	return r.Method == http.MethodHead || previewAgent(r)
}

// previewAgent reports whether r's User-Agent is a known link-preview
// fetcher or crawler (see previewAgents).
func previewAgent(r *http.Request) bool {
	ua := strings.ToLower(r.UserAgent())
	for _, a := range previewAgents {
		if strings.Contains(ua, a) {
			return true
		}
	}
	return false
}
