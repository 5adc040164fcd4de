package meal

import (
	"net/http"

	"ndiro/internal/storage"
	"ndiro/internal/user"
	"ndiro/internal/web"
)

// msgPhotoNotKept is the photo message of a form shown again after
// storage did not answer, when the photo could not be kept either.
const msgPhotoNotKept = "The photo could not be kept while storage is not answering; choose it again."

// unavailable answers a meal form that storage did not answer for
// (storage.ErrUnavailable): 503 with Retry-After, and the form p again
// with everything as typed. Its photo is kept as a pending upload unless
// the bucket is what did not answer, so that sending the form again
// needs no new upload (the page script sends it again by itself after
// Retry-After; without it the person presses Save).
func (h *Handler) unavailable(w http.ResponseWriter, r *http.Request, err error, p *formPage, up *upload) error {
	if storage.Service(err) != "S3" {
		if kerr := h.keep(r, &p.Form, up); kerr != nil {
			h.log.Warn("photo not kept for a form storage did not answer", "user_id", user.ID(r.Context()), "err", kerr)
		}
	}
	p.Kept = up.pending
	if p.Form.Errors == nil {
		p.Form.Errors = map[string]string{}
	}
	p.Form.Errors["meal"] = web.MsgUnavailable
	if up.proc != nil {
		p.Form.Errors["photo"] = msgPhotoNotKept
	}
	w.Header().Set("Retry-After", web.UnavailableRetryAfter)
	return h.renderForm(w, r, http.StatusServiceUnavailable, p)
}
