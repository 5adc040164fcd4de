package photo

import (
	"strconv"
	"strings"
)

// Slot is a place pages show a photo in; its sizes attribute says how
// wide the place is at each layout, so the browser picks the copy its
// screen needs (srcset), and whether it shows the square thumbnails or
// the whole photo. The widths are the CSS's (static/app.css), checked in
// Chromium against the laid-out pages (TestBrowserSlots).
type Slot int

const (
	// SlotGrid is a cell of the owner's month and window grid: three
	// columns on a phone (main's padding 0.75rem a side, gaps 0.5rem),
	// at least 10rem from 40rem (at most 12.5rem wide), three to a day
	// column of two from 64rem.
	SlotGrid Slot = iota
	// SlotDense is a cell of the owner's denser grid: five columns on a
	// phone (main's padding 0.75rem a side, gaps 0.35rem), columns of
	// 7.5rem from 40rem.
	SlotDense
	// SlotStrip is a cell of the recipient's day strip: 7.5rem, 8.5rem
	// from 40rem; from 64rem a seventh of main (at most 80rem) less the
	// gaps.
	SlotStrip
	// SlotWeek is a cell of the recipient's week table: at most 7rem.
	SlotWeek
	// SlotIcon is the 4.5rem thumbnail beside a meal's comments on the
	// owner's page of a link's comments.
	SlotIcon
	// SlotDetail is the photo of the owner's meal page: main's width on a
	// phone, 3/5 of it (less the 1rem gap) from 48rem, main at most 60rem.
	SlotDetail
	// SlotShareDetail is the photo of a recipient's meal page: as
	// SlotDetail, in a main of at most 80rem.
	SlotShareDetail
)

// sizeRule is one entry of a sizes attribute: a media condition ("" for
// the last, unconditional one) and the slot's width under it.
type sizeRule struct{ media, width string }

// slotRules are each slot's widths, widest layout first, as CSS lengths.
var slotRules = map[Slot][]sizeRule{
	SlotGrid:        {{"(min-width: 40rem)", "12.5rem"}, {"", "calc((100vw - 2.5rem) / 3)"}},
	SlotDense:       {{"(min-width: 40rem)", "7.5rem"}, {"", "calc((100vw - 2.9rem) / 5)"}},
	SlotStrip:       {{"(min-width: 80rem)", "10.8rem"}, {"(min-width: 64rem)", "calc((100vw - 5.2rem) / 7)"}, {"(min-width: 40rem)", "8.5rem"}, {"", "7.5rem"}},
	SlotWeek:        {{"", "7rem"}},
	SlotIcon:        {{"", "4.5rem"}},
	SlotDetail:      {{"(min-width: 60rem)", "34.5rem"}, {"(min-width: 48rem)", "calc((100vw - 2.5rem) * 0.6)"}, {"", "calc(100vw - 1.5rem)"}},
	SlotShareDetail: {{"(min-width: 80rem)", "46.5rem"}, {"(min-width: 48rem)", "calc((100vw - 2.5rem) * 0.6)"}, {"", "calc(100vw - 1.5rem)"}},
}

// thumbDensity caps thumbnails at 2× density: on a screen of 2.5 device
// pixels per CSS pixel or more, a thumbnail slot says it is 2/3 as wide
// as it is, so a 3× phone fetches the copy of a 2× one. At 80–200 CSS px
// the difference does not show, and the 3× copy costs twice the bytes.
const thumbDensity = "(min-resolution: 2.5dppx)"

// slotSizes are the sizes attributes, by slot.
var slotSizes = func() map[Slot]string {
	out := map[Slot]string{}
	for slot, rules := range slotRules {
		var parts []string
		if slot.Square() {
			for _, r := range rules {
				media := thumbDensity
				if r.media != "" {
					media = r.media + " and " + thumbDensity
				}
				parts = append(parts, media+" calc("+r.width+" * 2 / 3)")
			}
		}
		for _, r := range rules {
			parts = append(parts, strings.TrimSpace(r.media+" "+r.width))
		}
		out[slot] = strings.Join(parts, ", ")
	}
	return out
}()

// Sizes returns the slot's sizes attribute.
func (s Slot) Sizes() string { return slotSizes[s] }

// Square reports whether the slot shows square thumbnails (every slot
// but the meal pages').
func (s Slot) Square() bool { return s != SlotDetail && s != SlotShareDetail }

// Picture is one photo in one slot, as the "picture" template
// (templates/partials/picture.html) writes it: a <picture> whose
// <source type="image/webp"> lists the WebP copies and whose <img> the
// JPEG ones, so a browser picks the format it reads and the copy its
// slot needs, and JPEG is what any other gets. Every field is ready to
// print.
type Picture struct {
	// Src is the JPEG a browser without srcset shows.
	Src string
	// Srcset lists the JPEG copies with their widths ("… 160w, … 320w"),
	// and WebP the WebP ones; either is "" when the photo has none of
	// that kind yet (the variant job has not been by), and then Src alone
	// is shown.
	Srcset, WebP string
	// Sizes is the slot's sizes attribute (Slot.Sizes).
	Sizes string
	// W and H are the width and height attributes: the copies' aspect
	// ratio, so the slot is laid out before any byte arrives.
	W, H int
	// Alt is the image's text; Class its class ("" for none).
	Alt, Class string
	// Lazy defers loading until the slot nears the screen; High marks
	// the first image a page shows (fetchpriority="high").
	Lazy, High bool
}

// Dims are the pixel sizes a meal's row records of its display copy (W,
// H) and legacy thumbnail (TW, TH).
type Dims struct{ W, H, TW, TH int }

// NewPicture returns the Picture of the photo whose copies are served
// at base ("/photo/2026-09-01/123000-abcdef", or a share's photo path)
// with ?v= the tag of v and &size=, holding set's copies, for slot. A
// square slot lists the square thumbnails (falling back to the legacy
// thumbnail, the only one a photo has until the variant job has been
// by); a meal page's slot lists the display sizes and the display copy, never
// one larger than the display copy.
func NewPicture(base string, v Version, set Set, d Dims, slot Slot) Picture {
	set = set.Of()
	u := base + "?v=" + v.Tag()
	p := Picture{Sizes: slot.Sizes()}
	var jpg, wp strings.Builder
	add := func(b *strings.Builder, size Size, w int) {
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		b.WriteString(u + "&size=" + string(size) + " " + strconv.Itoa(w) + "w")
	}
	if slot.Square() {
		p.Src, p.W, p.H = u+"&size=thumb", d.TW, d.TH
		largest := 0
		for i, vr := range variants {
			if !vr.square || set&(1<<i) == 0 {
				continue
			}
			if vr.format == WebP {
				add(&wp, vr.size, vr.side)
				continue
			}
			add(&jpg, vr.size, vr.side)
			largest = vr.side
		}
		if largest > 0 {
			p.W, p.H = largest, largest
		}
	} else {
		p.Src, p.W, p.H = u, d.W, d.H
		for i, vr := range variants {
			if vr.square || vr.side == 0 || set&(1<<i) == 0 {
				continue
			}
			w, _ := fitted(d.W, d.H, vr.side)
			if vr.format == WebP {
				add(&wp, vr.size, w)
			} else {
				add(&jpg, vr.size, w)
			}
		}
		if jpg.Len() > 0 {
			jpg.WriteString(", " + u + " " + strconv.Itoa(d.W) + "w")
		}
	}
	p.Srcset, p.WebP = jpg.String(), wp.String()
	return p
}
