package account_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"runtime"
	"runtime/metrics"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"ndiro/internal/apptest"
	"ndiro/internal/localenv"
	"ndiro/internal/photo"
)

// discard is a ResponseWriter that keeps nothing of the body, so that the
// benchmark measures the export, not a buffer holding it.
type discard struct {
	h http.Header
	n int64
}

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) WriteHeader(int)             {}
func (d *discard) Write(p []byte) (int, error) { d.n += int64(len(p)); return len(p), nil }

// BenchmarkExportZip streams the zip export of 300 meals with a 256 KB
// photo each (75 MB of photos) and reports the peak heap above the heap
// before the export ("peak-MB", sampled every 200 µs): the photos are
// streamed one at a time, so it must stay far under 64 MB.
func BenchmarkExportZip(b *testing.B) {
	const n, size = 300, 256 << 10
	app := apptest.New(b)
	c := app.Client()
	c.SignIn(adminEmail)
	owner := localenv.Subject(adminEmail)
	ctx := context.Background()
	body := make([]byte, size)
	rand.Read(body)
	var reqs []types.WriteRequest
	for i := range n {
		date, id := fmt.Sprintf("2026-%02d-%02d", 1+i/28%12, 1+i%28), fmt.Sprintf("12%02d00-%06x", i%60, i)
		v := strconv.Itoa(1_000_000 + i)
		if _, err := app.Env.S3.PutObject(ctx, &s3.PutObjectInput{
			Bucket: aws.String("test-photos"), Key: aws.String(photo.Key(owner, date, id, photo.SizeDisplay)),
			Body: bytes.NewReader(body), Metadata: map[string]string{"photo-v": v},
		}); err != nil {
			b.Fatal(err)
		}
		s := func(x string) types.AttributeValue { return &types.AttributeValueMemberS{Value: x} }
		reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: map[string]types.AttributeValue{
			"user_id": s(owner), "sk": s(date + "#" + id), "meal_id": s(id), "date": s(date), "time": s(id[:2] + ":" + id[2:4] + ":00"),
			"kind": s("lunch"), "version": &types.AttributeValueMemberN{Value: "1"}, "photo_v": &types.AttributeValueMemberN{Value: v},
		}}})
		if len(reqs) == 25 {
			if _, err := app.Env.DynamoDB.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{app.Tables.Meals.Name: reqs}}); err != nil {
				b.Fatal(err)
			}
			reqs = nil
		}
	}
	var peak uint64
	b.ReportAllocs()
	for b.Loop() {
		runtime.GC()
		base := heapBytes()
		done := make(chan int64)
		go func() {
			w := &discard{h: http.Header{}}
			app.Handler.ServeHTTP(w, c.ServerRequest("/account/export.zip"))
			done <- w.n
		}()
		tick := time.NewTicker(200 * time.Microsecond)
	sample:
		for {
			if h := heapBytes(); h > base && h-base > peak {
				peak = h - base
			}
			select {
			case sent := <-done:
				if sent < n*size {
					b.Fatalf("export sent %d bytes, want more than the %d of its photos", sent, n*size)
				}
				break sample
			case <-tick.C:
			}
		}
		tick.Stop()
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-MB")
}

var heapSample = []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}

func heapBytes() uint64 {
	metrics.Read(heapSample)
	return heapSample[0].Value.Uint64()
}
