package localenv

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestBoltCopyDuringWrites copies and reads objects while other uploads
// grow the bolt file (each growth remaps it): every copy and read gets the
// source's bytes, and the process does not crash on memory bolt unmapped.
func TestBoltCopyDuringWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := startDir(t, t.TempDir())
	bucket := aws.String("photos")
	put := func(key string, body []byte) error {
		_, err := env.S3.PutObject(ctx, &s3.PutObjectInput{Bucket: bucket, Key: aws.String(key), Body: bytes.NewReader(body)})
		return err
	}
	get := func(key string) ([]byte, error) {
		out, err := env.S3.GetObject(ctx, &s3.GetObjectInput{Bucket: bucket, Key: aws.String(key)})
		if err != nil {
			return nil, err
		}
		defer out.Body.Close()
		return io.ReadAll(out.Body)
	}
	src := bytes.Repeat([]byte("source photo "), 2000)
	if err := put("src.jpg", src); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	growing := make(chan struct{})
	more := func(i int) bool {
		select {
		case <-growing:
			return i < 10
		default:
			return true
		}
	}
	wg.Add(3)
	go func() { // grows the file by 12 MB, remapping it several times
		defer wg.Done()
		defer close(growing)
		for i := range 24 {
			if err := put(fmt.Sprintf("big-%d.jpg", i), bytes.Repeat([]byte{byte(i)}, 512<<10)); err != nil {
				errs <- err
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		for i := 0; more(i); i++ {
			dst := fmt.Sprintf("copy-%d.jpg", i)
			if _, err := env.S3.CopyObject(ctx, &s3.CopyObjectInput{Bucket: bucket, Key: aws.String(dst), CopySource: aws.String("photos/src.jpg")}); err != nil {
				errs <- err
				return
			}
			if b, err := get(dst); err != nil || !bytes.Equal(b, src) {
				errs <- fmt.Errorf("copy %s: %d bytes, %v; want the source's %d bytes", dst, len(b), err, len(src))
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		for i := 0; more(i); i++ {
			if b, err := get("src.jpg"); err != nil || !bytes.Equal(b, src) {
				errs <- fmt.Errorf("read src.jpg: %d bytes, %v; want %d bytes", len(b), err, len(src))
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
