package photo_test

import (
	"context"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"

	"ndiro/internal/apptest"
	"ndiro/internal/photo"
)

// BenchmarkProcessPortrait measures one upload of phone-portrait.jpg (12 MP,
// Orientation 6) through the whole pipeline, the CPU time it takes
// ("cpu-ms/op": user and system time of the process, garbage collection
// included, which a loaded machine does not inflate as it does ns/op), and
// the peak heap it needs above the heap before it ("peak-MB", sampled
// every 200 µs).
func BenchmarkProcessPortrait(b *testing.B) {
	data := apptest.Photo(b, "phone-portrait.jpg")
	p := photo.NewPipeline(photo.DefaultBudget, time.Minute)
	ctx := context.Background()
	var peak uint64
	b.ReportAllocs()
	cpu0 := cpuTime(b)
	for b.Loop() {
		runtime.GC()
		base := heapBytes()
		done := make(chan struct{})
		go func() {
			if _, err := p.Process(ctx, data); err != nil {
				b.Error(err)
			}
			close(done)
		}()
		tick := time.NewTicker(200 * time.Microsecond)
	sample:
		for {
			if h := heapBytes(); h > base && h-base > peak {
				peak = h - base
			}
			select {
			case <-done:
				break sample
			case <-tick.C:
			}
		}
		tick.Stop()
	}
	b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
	b.ReportMetric(float64(peak)/(1<<20), "peak-MB")
}

var heapSample = []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}

func heapBytes() uint64 {
	metrics.Read(heapSample)
	return heapSample[0].Value.Uint64()
}
