package localenv_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
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

// BenchmarkItemCall is one small DynamoDB call through the SDK client
// to the embedded emulator (a conditional PutItem, a GetItem): the
// round trip every page pays per storage call.
func BenchmarkItemCall(b *testing.B) {
	tables := dynamo.NewTables("call-")
	env, err := localenv.Start(context.Background(), localenv.Options{Tables: tables, Bucket: "photos"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { env.Close() })
	ctx := context.Background()
	key := map[string]types.AttributeValue{"user_id": &types.AttributeValueMemberS{Value: "u1"}}
	b.Run("put", func(b *testing.B) {
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			n++
			item := map[string]types.AttributeValue{"user_id": &types.AttributeValueMemberS{Value: fmt.Sprintf("u%d", n)},
				"email": &types.AttributeValueMemberS{Value: "ana@example.org"}}
			if _, err := env.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tables.Users.Name), Item: item}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("get", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := env.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tables.Users.Name), Key: key}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
