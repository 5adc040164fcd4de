package demo

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"math"
	"math/rand/v2"
)

// Food colours the dishes are drawn in.
var (
	tomato   = color.NRGBA{0xc8, 0x3a, 0x2a, 0xff}
	leaf     = color.NRGBA{0x4f, 0x8a, 0x3a, 0xff}
	herb     = color.NRGBA{0x2f, 0x6b, 0x2f, 0xff}
	rice     = color.NRGBA{0xf1, 0xec, 0xdc, 0xff}
	pasta    = color.NRGBA{0xe8, 0xc0, 0x6a, 0xff}
	bread    = color.NRGBA{0xb9, 0x7a, 0x3f, 0xff}
	crust    = color.NRGBA{0x7a, 0x4a, 0x22, 0xff}
	meat     = color.NRGBA{0x8a, 0x4b, 0x35, 0xff}
	salmon   = color.NRGBA{0xef, 0x8a, 0x62, 0xff}
	egg      = color.NRGBA{0xf6, 0xc3, 0x2e, 0xff}
	white    = color.NRGBA{0xf7, 0xf5, 0xee, 0xff}
	berry    = color.NRGBA{0x3d, 0x3a, 0x7a, 0xff}
	banana   = color.NRGBA{0xf0, 0xd8, 0x7a, 0xff}
	oats     = color.NRGBA{0xd9, 0xc4, 0x9a, 0xff}
	lentil   = color.NRGBA{0xb8, 0x6b, 0x2c, 0xff}
	curry    = color.NRGBA{0xd8, 0x8f, 0x22, 0xff}
	avocado  = color.NRGBA{0x9b, 0xb8, 0x4a, 0xff}
	carrot   = color.NRGBA{0xe8, 0x7a, 0x1e, 0xff}
	mushroom = color.NRGBA{0x9c, 0x86, 0x6a, 0xff}
	chili    = color.NRGBA{0x8f, 0x2d, 0x1c, 0xff}
	potato   = color.NRGBA{0xe2, 0xc2, 0x78, 0xff}
	cocoa    = color.NRGBA{0x4a, 0x2c, 0x1c, 0xff}
	coffee   = color.NRGBA{0x6f, 0x45, 0x2a, 0xff}
	foam     = color.NRGBA{0xd8, 0xb9, 0x94, 0xff}
	tea      = color.NRGBA{0xa8, 0x6a, 0x1c, 0xff}
	orange   = color.NRGBA{0xf5, 0x9a, 0x1b, 0xff}
	almond   = color.NRGBA{0xa8, 0x72, 0x45, 0xff}
	apple    = color.NRGBA{0xb7, 0x2f, 0x2f, 0xff}
	hummus   = color.NRGBA{0xd9, 0xbd, 0x86, 0xff}
)

// tables are the surfaces a plate stands on: wood, slate, linen, stone.
var tables = []struct {
	base  color.NRGBA
	grain float64 // how strongly stripes show
}{
	{color.NRGBA{0x8a, 0x5d, 0x3b, 0xff}, .10},
	{color.NRGBA{0x3a, 0x3f, 0x44, 0xff}, .04},
	{color.NRGBA{0xd8, 0xd0, 0xc2, 0xff}, .03},
	{color.NRGBA{0x9a, 0x9a, 0x94, 0xff}, .05},
	{color.NRGBA{0x6e, 0x4a, 0x32, 0xff}, .12},
}

// plates are the plate and cup colours.
var plates = []color.NRGBA{
	{0xf4, 0xf2, 0xee, 0xff}, {0xee, 0xe5, 0xd0, 0xff}, {0xdc, 0xe6, 0xee, 0xff}, {0xe9, 0xe9, 0xe4, 0xff},
}

// canvas is an image being painted, with the random source that decides
// every shape.
type canvas struct {
	img *image.NRGBA
	rng *rand.Rand
}

// set blends c over the pixel at x, y with opacity a (0 to 1).
func (c *canvas) set(x, y int, col color.NRGBA, a float64) {
	i := c.img.PixOffset(x, y)
	p := c.img.Pix[i : i+3 : i+3]
	p[0] = uint8(float64(p[0])*(1-a) + float64(col.R)*a)
	p[1] = uint8(float64(p[1])*(1-a) + float64(col.G)*a)
	p[2] = uint8(float64(p[2])*(1-a) + float64(col.B)*a)
}

// shade returns col lightened (f > 1) or darkened (f < 1).
func shade(col color.NRGBA, f float64) color.NRGBA {
	ch := func(v uint8) uint8 { return uint8(math.Max(0, math.Min(255, float64(v)*f))) }
	return color.NRGBA{ch(col.R), ch(col.G), ch(col.B), 0xff}
}

// ellipse paints an ellipse centred on cx, cy with radii rx, ry turned by
// angle. paint gives the colour and opacity at a point, in the ellipse's
// own coordinates (-1 to 1 on each axis).
func (c *canvas) ellipse(cx, cy, rx, ry, angle float64, paint func(u, v float64) (color.NRGBA, float64)) {
	b := c.img.Bounds()
	r := math.Max(rx, ry)
	sin, cos := math.Sincos(angle)
	for y := max(b.Min.Y, int(cy-r)); y < min(b.Max.Y, int(cy+r)+1); y++ {
		for x := max(b.Min.X, int(cx-r)); x < min(b.Max.X, int(cx+r)+1); x++ {
			dx, dy := float64(x)-cx, float64(y)-cy
			u, v := (dx*cos+dy*sin)/rx, (-dx*sin+dy*cos)/ry
			if u*u+v*v > 1 {
				continue
			}
			col, a := paint(u, v)
			if a > 0 {
				c.set(x, y, col, a)
			}
		}
	}
}

// lit paints col lit from the top left, darker towards the far edge.
func lit(col color.NRGBA) func(u, v float64) (color.NRGBA, float64) {
	return func(u, v float64) (color.NRGBA, float64) {
		return shade(col, 1.08-.12*(u+v)/2-.1*(u*u+v*v)), 1
	}
}

// drawPhoto paints a top-down photo of d, w×h pixels: a table, a plate
// (or a cup for drinks) with its shadow, the dish as lit blobs in its
// colours, a scatter of small bits (grains, herbs, crumbs), and sensor
// noise. Everything random comes from rng, so a seed gives one photo.
func drawPhoto(rng *rand.Rand, d dish, w, h int) *image.NRGBA {
	c := &canvas{img: image.NewNRGBA(image.Rect(0, 0, w, h)), rng: rng}
	tb := tables[rng.IntN(len(tables))]
	phase := rng.Float64() * 10
	for y := 0; y < h; y++ {
		grain := 1 + tb.grain*math.Sin(float64(y)*.06+3*math.Sin(float64(y)*.011+phase))
		for x := 0; x < w; x++ {
			i := c.img.PixOffset(x, y)
			f := grain * (1 + .03*math.Sin(float64(x)*.013+phase))
			col := shade(tb.base, f)
			c.img.Pix[i], c.img.Pix[i+1], c.img.Pix[i+2], c.img.Pix[i+3] = col.R, col.G, col.B, 0xff
		}
	}
	m := float64(min(w, h))
	cx := float64(w) * (.44 + .12*rng.Float64())
	cy := float64(h) * (.44 + .12*rng.Float64())
	plate := plates[rng.IntN(len(plates))]
	r := m * (.40 + .05*rng.Float64())
	if d.drink {
		r = m * (.27 + .04*rng.Float64())
	}
	// Shadow, then the plate or cup: a rim and a slightly darker well.
	c.ellipse(cx+.05*r, cy+.08*r, r*1.02, r*1.02, 0, func(u, v float64) (color.NRGBA, float64) {
		return color.NRGBA{0, 0, 0, 0xff}, .28 * (1 - (u*u+v*v)*.6)
	})
	if d.drink {
		c.ellipse(cx+r*1.05, cy, r*.32, r*.18, 0, func(u, v float64) (color.NRGBA, float64) {
			if u*u+v*v < .35 {
				return color.NRGBA{}, 0
			}
			return shade(plate, .95), 1
		})
	}
	c.ellipse(cx, cy, r, r, 0, func(u, v float64) (color.NRGBA, float64) {
		d2 := u*u + v*v
		if d2 > .6 {
			return shade(plate, 1.02-.06*(u+v)/2), 1
		}
		return shade(plate, .94-.04*(u+v)/2), 1
	})
	well := r * .74
	if d.drink {
		well = r * .84
		c.ellipse(cx, cy, well, well, 0, lit(d.colors[0]))
		if len(d.colors) > 1 { // foam or a slice
			c.ellipse(cx+.1*well, cy-.05*well, well*.55, well*.45, rng.Float64()*math.Pi, lit(d.colors[1]))
		}
	} else {
		n := 4 + rng.IntN(5)
		for i := 0; i < n; i++ {
			a := rng.Float64() * 2 * math.Pi
			dist := well * .5 * math.Sqrt(rng.Float64())
			rx := well * (.28 + .24*rng.Float64())
			ry := rx * (.55 + .45*rng.Float64())
			col := d.colors[rng.IntN(len(d.colors))]
			c.ellipse(cx+dist*math.Cos(a), cy+dist*math.Sin(a), rx, ry, rng.Float64()*math.Pi, lit(col))
		}
		bits := 15 + rng.IntN(45)
		for i := 0; i < bits; i++ {
			a := rng.Float64() * 2 * math.Pi
			dist := well * .7 * math.Sqrt(rng.Float64())
			s := m * (.005 + .009*rng.Float64())
			col := shade(d.colors[rng.IntN(len(d.colors))], .75+.5*rng.Float64())
			c.ellipse(cx+dist*math.Cos(a), cy+dist*math.Sin(a), s*1.6, s, rng.Float64()*math.Pi, lit(col))
		}
	}
	// Cutlery beside a plate, now and then.
	if !d.drink && rng.IntN(3) > 0 {
		x := cx + r*1.18
		if x+m*.05 < float64(w) {
			c.ellipse(x, cy, m*.018, r*.95, 0, lit(color.NRGBA{0xc9, 0xcc, 0xcf, 0xff}))
		}
	}
	// Sensor noise, so the photo compresses like one.
	for i := 0; i < len(c.img.Pix); i += 4 {
		n := int(rng.Uint32()%17) - 8
		for j := 0; j < 3; j++ {
			c.img.Pix[i+j] = uint8(max(0, min(255, int(c.img.Pix[i+j])+n)))
		}
	}
	return c.img
}

// FoodPhoto returns a generated JPEG of a plate of food, w×h pixels, as a
// phone might take it from above. Each seed gives a different dish,
// plate, table and arrangement; the same seed always gives the same photo.
// Tests use it for photos of a realistic size without fixtures.
func FoodPhoto(seed uint64, w, h int) ([]byte, error) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	all := allDishes()
	img := drawPhoto(rng, all[rng.IntN(len(all))], w, h)
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 88}); err != nil {
		return nil, fmt.Errorf("demo: encode photo: %w", err)
	}
	return buf.Bytes(), nil
}
