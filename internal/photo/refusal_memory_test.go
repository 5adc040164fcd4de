package photo_test

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"ndiro/internal/archive"
	"ndiro/internal/archive/archivetest"
	"ndiro/internal/photo"
)

// refusalMemoryBound is what refusing one hostile zip may add to the heap
// in use, the staged zip's reader and its block cache included.
const refusalMemoryBound = 64 << 20

// bombData returns a raw deflate stream of n MiB flushed segments, each
// 1 MiB of zeros compressed: about a thousandth of what it inflates to.
func bombData(t *testing.T, n int) []byte {
	t.Helper()
	var seg bytes.Buffer
	fw, _ := flate.NewWriter(&seg, flate.BestCompression)
	fw.Write(make([]byte, 1<<20))
	fw.Flush() // byte-aligned, not final: segments can follow each other
	out := bytes.Repeat(seg.Bytes(), n)
	return append(out, 0x03, 0x00) // an empty final block
}

// rawZip writes one entry raw with the header's sizes as given, then the
// central directory.
func rawZip(t *testing.T, name string, data []byte, declared uint64) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.CreateRaw(&zip.FileHeader{Name: name, Method: zip.Deflate, CompressedSize64: uint64(len(data)), UncompressedSize64: declared})
	if err == nil {
		_, err = w.Write(data)
	}
	if err == nil {
		err = zw.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// streamZip returns a reader of a zip that write fills, made as it is read.
func streamZip(write func(zw *zip.Writer) error) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		zw := zip.NewWriter(pw)
		err := write(zw)
		if err == nil {
			err = zw.Close()
		}
		pw.CloseWithError(err)
	}()
	return pr
}

// manyMeals writes a stored meals.json of about size bytes of meals with
// random notes (so it does not deflate: no ratio refusal comes first).
func manyMeals(zw *zip.Writer, size int) error {
	w, err := zw.CreateHeader(&zip.FileHeader{Name: archive.MealsFile, Method: zip.Store})
	if err != nil {
		return err
	}
	r := rand.New(rand.NewPCG(5, 6))
	const letters = "abcdefghijklmnopqrstuvwxyz "
	note := make([]byte, 60)
	var b bytes.Buffer
	b.WriteString(`{"email":"a@example.com","meals":[`)
	for i := 0; b.Len() < size || i == 0; i++ {
		for k := range note {
			note[k] = letters[r.IntN(len(letters))]
		}
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"date":"2026-09-%02d","time":"12:%02d:00","kind":"lunch","notes":"%s"}`, 1+i%28, i%60, note)
		if b.Len() >= 1<<20 {
			if _, err := w.Write(b.Bytes()); err != nil {
				return err
			}
			size -= b.Len()
			b.Reset()
		}
	}
	b.WriteString(`]}`)
	_, err = w.Write(b.Bytes())
	return err
}

// manyEntries writes n empty stored files, and no meals.json.
func manyEntries(zw *zip.Writer, n int) error {
	for i := range n {
		if _, err := zw.CreateHeader(&zip.FileHeader{Name: fmt.Sprintf("photos/%07d.jpg", i), Method: zip.Store}); err != nil {
			return err
		}
	}
	return nil
}

// claimedDirectory is size bytes of zeros ending in an end record that
// says the central directory is the last dir bytes before it.
func claimedDirectory(size, dir int64) io.Reader {
	end := make([]byte, 22)
	binary.LittleEndian.PutUint32(end, 0x06054b50)
	binary.LittleEndian.PutUint16(end[8:], 1)
	binary.LittleEndian.PutUint16(end[10:], 1)
	binary.LittleEndian.PutUint32(end[12:], uint32(dir))
	binary.LittleEndian.PutUint32(end[16:], uint32(size-22-dir))
	return io.MultiReader(io.LimitReader(zeros{}, size-22), bytes.NewReader(end))
}

// heapAt is an io.ReaderAt that samples the heap in use into w every
// 256 KiB read.
type heapAt struct {
	ra   io.ReaderAt
	w    *heapWatch
	read int64
}

func (h *heapAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := h.ra.ReadAt(p, off)
	h.read += int64(n)
	if h.read >= h.w.next {
		h.w.sample()
		h.w.next = h.read + 256<<10
	}
	return n, err
}

// TestImportRefusalMemory stages hostile zips into local mode's S3 (on a
// data dir) and opens each through the staged parts' ranged reads, as
// POST /account/import does: each must be refused with its reason, the
// heap in use sampled every 256 KiB the reads take growing by at most
// refusalMemoryBound. Run with NDIRO_TEST_IMPORT_MEMORY=1 (make
// import-memory); it stages about 530 MB.
func TestImportRefusalMemory(t *testing.T) {
	if os.Getenv("NDIRO_TEST_IMPORT_MEMORY") == "" {
		t.Skip("set NDIRO_TEST_IMPORT_MEMORY=1 (make import-memory)")
	}
	serviceGC(t)
	env := startLocal(t)
	store := photo.NewStore(env.S3, "b")
	bomb := bombData(t, 4096) // inflates to 4 GiB
	for i, c := range []struct {
		name string
		zip  func() io.Reader
		want string
	}{
		{"meals.json declaring 100 bytes, inflating to 4 GiB",
			func() io.Reader { return bytes.NewReader(rawZip(t, archive.MealsFile, bomb, 100)) },
			"holds more bytes than the zip declares for it"},
		{"meals.json declaring 8 GiB",
			func() io.Reader { return bytes.NewReader(rawZip(t, archive.MealsFile, bomb, 8<<30)) },
			"bytes uncompressed; at most"},
		{"100 MB meals.json, past the meal count",
			func() io.Reader { return streamZip(func(zw *zip.Writer) error { return manyMeals(zw, 100<<20) }) },
			"meals"},
		{"100,000 entries, the most taken, and no meals.json",
			func() io.Reader { return streamZip(func(zw *zip.Writer) error { return manyEntries(zw, 100_000) }) },
			"meals.json is missing"},
		{"120,000 entries",
			func() io.Reader { return streamZip(func(zw *zip.Writer) error { return manyEntries(zw, 120_000) }) },
			"the zip has 120000 entries; at most 100000"},
		{"a central directory claiming 3 GiB",
			func() io.Reader { return claimedDirectory(1<<20, 3<<30) },
			"central directory does not end where its end record begins"},
		{"a 150 MB central directory",
			func() io.Reader { return claimedDirectory(200<<20, 150<<20) },
			"central directory is 157286400 bytes; at most"},
		{"two end records, the last one's pointing at 1.2 million entries hidden in an entry",
			func() io.Reader { return bytes.NewReader(archivetest.TwoEnds(1_200_000)) },
			"does not end with its end of central directory record"},
		{"60,000 entries at one local header",
			func() io.Reader { return bytes.NewReader(archivetest.Overlapping(60_000)) },
			"overlap"},
	} {
		st, err := store.Stage(context.Background(), "u1", photo.StagedPrefix("u1", fmt.Sprintf("h%d", i)), c.zip(), 1<<30)
		if err != nil {
			t.Fatalf("%s: Stage: %v", c.name, err)
		}
		r, err := store.OpenStaged(context.Background(), "u1", st)
		if err != nil {
			t.Fatal(err)
		}
		watch := newHeapWatch(nil)
		_, err = archive.Open(&heapAt{ra: r, w: watch}, r.Size(), archive.Limits{})
		watch.sample()
		var refused *archive.Refusal
		if !errors.As(err, &refused) || !strings.Contains(refused.Reason, c.want) {
			t.Errorf("%s: Open = %v; want a refusal saying %q", c.name, err, c.want)
		}
		t.Logf("%s (%d MB staged): refused, heap in use %+d MiB (bound %d MiB)", c.name, st.Size>>20, watch.grew()>>20, refusalMemoryBound>>20)
		if watch.grew() > refusalMemoryBound {
			t.Errorf("%s: the heap in use grew by %d MiB while it was refused; want at most %d MiB", c.name, watch.grew()>>20, refusalMemoryBound>>20)
		}
		if err := store.DeleteStaged(context.Background(), "u1", st.Prefix); err != nil {
			t.Fatal(err)
		}
	}
}
