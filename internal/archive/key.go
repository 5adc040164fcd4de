package archive

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"strconv"

	"github.com/shopspring/decimal"
)

// ContentKey returns a digest of what makes two meals the same meal to an
// import: the date, time, kind, notes, the four numbers (by value: 12.5
// and 12.50 are one number), hunger and fullness; 64 lowercase hex digits
// (SHA-256). It leaves out what an import changes or cannot compare: the
// ID, the created and updated times, the photo and the comments. A meal
// already in a diary gets its key by converting it to a Meal first, so
// the two sides are compared by one function.
func (m *Meal) ContentKey() string {
	h := sha256.New()
	field := func(h hash.Hash, s string) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	num := func(d *decimal.Decimal) string {
		if d == nil {
			return ""
		}
		return d.String()
	}
	field(h, "ndiro meal content 1")
	for _, s := range []string{
		m.Date, m.Time, m.Kind, m.Notes,
		num(m.Kcal), num(m.ProteinG), num(m.CarbsG), num(m.FatG),
		strconv.Itoa(m.Hunger), strconv.Itoa(m.Fullness),
	} {
		field(h, s)
	}
	return hex.EncodeToString(h.Sum(nil))
}
