package localenv_test

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"ndiro/internal/dynamo"
	"ndiro/internal/localenv"
)

// BenchmarkPhotoGet reads a photo-sized object (3 MiB) and an import
// part (8 MiB) from the embedded S3 through the SDK client, the body
// copied through a 32 KiB buffer as the photo server and the staged
// import read it: B/op, well under the object's size, shows the body
// streamed rather than held whole on its way.
func BenchmarkPhotoGet(b *testing.B) {
	env, err := localenv.Start(context.Background(), localenv.Options{Tables: dynamo.NewTables("get-"), Bucket: "photos"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { env.Close() })
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		size int
	}{{"photo=3MiB", 3 << 20}, {"part=8MiB", 8 << 20}} {
		key := "users/u1/" + tc.name
		if _, err := env.S3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("photos"), Key: aws.String(key),
			Body: bytes.NewReader(bytes.Repeat([]byte{0xa5}, tc.size))}); err != nil {
			b.Fatal(err)
		}
		b.Run(tc.name, func(b *testing.B) {
			buf := make([]byte, 32<<10)
			b.SetBytes(int64(tc.size))
			b.ReportAllocs()
			for b.Loop() {
				out, err := env.S3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("photos"), Key: aws.String(key)})
				if err != nil {
					b.Fatal(err)
				}
				n, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{out.Body}, buf)
				out.Body.Close()
				if err != nil || n != int64(tc.size) {
					b.Fatalf("read %d bytes, %v, want %d", n, err, tc.size)
				}
			}
		})
	}
}
