//go:build ignore

// Rotate-heic writes a copy of a HEIC file whose primary image carries an
// irot property of the given quarter turns anticlockwise (ISO/IEC
// 23008-12), as phones save photos taken sideways: the coded pixels stay
// as they are, a viewer turns them. It adds the property to ipco,
// associates it (essential) with the primary item in ipma, grows the
// enclosing boxes and moves every iloc file offset behind the insertion:
//
//	heif-enc -q 50 -o /tmp/sideways.heic phone-portrait-small.jpg
//	go run rotate-heic.go /tmp/sideways.heic rotated.heic 3
//
// heif-enc ignores the JPEG's EXIF orientation (6) and codes the stored,
// sideways pixels; irot 3 (270° anticlockwise) stands them upright.
package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: go run rotate-heic.go IN.heic OUT.heic QUARTER-TURNS")
		os.Exit(2)
	}
	b, err := os.ReadFile(os.Args[1])
	check(err)
	turns, err := strconv.Atoi(os.Args[3])
	check(err)
	out, err := rotate(b, byte(turns&3))
	check(err)
	check(os.WriteFile(os.Args[2], out, 0o644))
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// span is a box: where it starts and its whole size.
type span struct{ start, size int }

func find(b []byte, from, to int, typ string) (span, bool) {
	for off := from; off+8 <= to; {
		size := int(binary.BigEndian.Uint32(b[off:]))
		if size < 8 || off+size > to {
			return span{}, false
		}
		if string(b[off+4:off+8]) == typ {
			return span{off, size}, true
		}
		off += size
	}
	return span{}, false
}

func grow(b []byte, s span, by int) {
	binary.BigEndian.PutUint32(b[s.start:], uint32(s.size+by))
}

func rotate(b []byte, turns byte) ([]byte, error) {
	meta, ok := find(b, 0, len(b), "meta")
	if !ok {
		return nil, fmt.Errorf("no meta box")
	}
	inner := meta.start + 12 // box header + FullBox
	end := meta.start + meta.size
	pitm, ok1 := find(b, inner, end, "pitm")
	iprp, ok2 := find(b, inner, end, "iprp")
	iloc, ok3 := find(b, inner, end, "iloc")
	if !ok1 || !ok2 || !ok3 || b[pitm.start+8] != 0 {
		return nil, fmt.Errorf("need pitm (version 0), iprp and iloc")
	}
	primary := binary.BigEndian.Uint16(b[pitm.start+12:])
	ipco, ok1 := find(b, iprp.start+8, iprp.start+iprp.size, "ipco")
	ipma, ok2 := find(b, iprp.start+8, iprp.start+iprp.size, "ipma")
	if !ok1 || !ok2 || b[ipma.start+8] != 0 || b[ipma.start+11]&1 != 0 {
		return nil, fmt.Errorf("need ipco and a version 0, 1-byte ipma")
	}
	// The new property's 1-based index in ipco.
	index := 1
	for off := ipco.start + 8; off < ipco.start+ipco.size; index++ {
		off += int(binary.BigEndian.Uint32(b[off:]))
	}
	irot := []byte{0, 0, 0, 9, 'i', 'r', 'o', 't', turns}
	// Find the primary item's ipma entry: count its associations.
	entry := ipma.start + 16 // header, FullBox, u32 entry_count
	for {
		if entry+3 > ipma.start+ipma.size {
			return nil, fmt.Errorf("no ipma entry for item %d", primary)
		}
		id, n := binary.BigEndian.Uint16(b[entry:]), int(b[entry+2])
		if id == primary {
			break
		}
		entry += 3 + n
	}
	n := int(b[entry+2])
	// Build the output: ... ipco contents, irot, rest up to the entry's
	// end, the new association, the rest.
	ipcoEnd := ipco.start + ipco.size
	entryEnd := entry + 3 + n
	if ipcoEnd > entry {
		return nil, fmt.Errorf("ipco after ipma is not handled")
	}
	out := append([]byte{}, b[:ipcoEnd]...)
	out = append(out, irot...)
	out = append(out, b[ipcoEnd:entryEnd]...)
	out = append(out, 0x80|byte(index))
	out = append(out, b[entryEnd:]...)
	const added = 9 + 1
	grow(out, meta, added)
	grow(out, iprp, added)
	grow(out, ipco, 9)
	grow(out, span{ipma.start + 9, ipma.size}, 1) // ipma moved by 9
	out[entry+9+2]++                              // association_count
	// iloc sits before or after the insertion; its offsets point past it.
	ilocAt := iloc.start
	if ilocAt > ipcoEnd {
		ilocAt += added
	}
	return out, shiftIloc(out, ilocAt, meta.start+meta.size)
}

// shiftIloc moves every file offset of the iloc box at at (version 0 or
// 1, construction method 0) that points past limit by 10 bytes.
func shiftIloc(b []byte, at, limit int) error {
	p := at + 12
	v := b[at+8]
	offSize, lenSize, baseSize := int(b[p]>>4), int(b[p]&0xF), int(b[p+1]>>4)
	idxSize := 0
	if v == 1 {
		idxSize = int(b[p+1] & 0xF)
	}
	p += 2
	count := int(binary.BigEndian.Uint16(b[p:]))
	p += 2
	rd := func(n int) (uint64, int) {
		var x uint64
		for i := range n {
			x = x<<8 | uint64(b[p+i])
		}
		return x, p
	}
	wr := func(at, n int, x uint64) {
		for i := n - 1; i >= 0; i-- {
			b[at+i] = byte(x)
			x >>= 8
		}
	}
	for range count {
		p += 2 // item_ID
		if v == 1 {
			p += 2 // construction_method
		}
		p += 2 // data_reference_index
		base, baseAt := rd(baseSize)
		p += baseSize
		if baseSize > 0 && base > uint64(limit) {
			wr(baseAt, baseSize, base+10)
		}
		extents := int(binary.BigEndian.Uint16(b[p:]))
		p += 2
		for range extents {
			p += idxSize
			off, offAt := rd(offSize)
			p += offSize
			if base == 0 && off > uint64(limit) {
				wr(offAt, offSize, off+10)
			}
			p += lenSize
		}
	}
	return nil
}
