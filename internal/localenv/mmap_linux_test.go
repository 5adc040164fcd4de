package localenv

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestBoltMapLeavesResidentSet writes and reads 24 MB of photos through
// local mode's S3: the pages of bolt's memory map do not stay in the
// process's resident set (at most one release interval's worth, and the
// tree's own pages, remain), and every object still reads back whole.
func TestBoltMapLeavesResidentSet(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	env := startDir(t, dir)
	bucket := aws.String("photos")
	body := func(i int) []byte { return bytes.Repeat([]byte{byte(i)}, 256<<10) }
	const n = 48 // 12 MB written, 12 MB read
	for i := range n {
		if _, err := env.S3.PutObject(ctx, &s3.PutObjectInput{Bucket: bucket, Key: aws.String(fmt.Sprint(i)), Body: bytes.NewReader(body(i))}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		out, err := env.S3.GetObject(ctx, &s3.GetObjectInput{Bucket: bucket, Key: aws.String(fmt.Sprint(i))})
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(out.Body)
		out.Body.Close()
		if err != nil || !bytes.Equal(got, body(i)) {
			t.Fatalf("object %d: %d bytes, %v; want its 256 KB back", i, len(got), err)
		}
	}
	if rss := mappedRSS(t, filepath.Join(dir, "s3.bolt")); rss > releaseEvery+2<<20 {
		t.Errorf("s3.bolt map holds %d KB of the resident set after 24 MB through it, want at most %d KB", rss>>10, (releaseEvery+2<<20)>>10)
	}
}

// mappedRSS is the resident size of this process's mappings of path, from
// /proc/self/smaps.
func mappedRSS(t *testing.T, path string) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 5 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":"):
			in = len(f) >= 6 && f[5] == path
		case in && len(f) >= 2 && f[0] == "Rss:":
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			total += kb << 10
		}
	}
	return total
}
