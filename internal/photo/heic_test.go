package photo_test

import (
	"bytes"
	"context"
	"errors"
	"image/jpeg"
	"log/slog"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"ndiro/internal/apptest"
	"ndiro/internal/photo"
)

// heicEnv, set to "1", runs the tests that decode HEIC (make heic): a
// decode costs about 2 s of CPU per 12 megapixels in the worker, far more
// under the race detector.
const heicEnv = "NDIRO_TEST_HEIC"

func needHEIC(t *testing.T) {
	t.Helper()
	if os.Getenv(heicEnv) != "1" {
		t.Skip("decodes HEIC: make heic (" + heicEnv + "=1)")
	}
}

// heicPipeline is a pipeline whose HEIC worker is this test binary
// (TestMain hands "heic-worker" to photo.RunHEICWorker).
func heicPipeline(t *testing.T, command func() *exec.Cmd) (*photo.Pipeline, *photo.HEICDecoder) {
	t.Helper()
	d := photo.NewHEICDecoder(command, photo.DefaultHEICLimits(), time.Minute, slog.New(slog.DiscardHandler))
	t.Cleanup(func() { d.Close() })
	return photo.NewPipeline(photo.DefaultBudget, time.Minute).WithHEIC(d), d
}

// TestHEICFixtures: photo.heic (4032×3024) becomes a 2048×1536 display
// copy and a 480×360 thumbnail, upright, without EXIF or GPS, with the
// capture time from its Exif item; rotated.heic (sideways pixels, irot 3,
// and EXIF Orientation 6 that must not be applied on top) comes out
// upright and portrait.
func TestHEICFixtures(t *testing.T) {
	needHEIC(t)
	p, d := heicPipeline(t, nil)
	for _, tc := range []struct {
		file         string
		w, h, tw, th int
		taken        string
	}{
		{"photo.heic", 2048, 1536, 480, 360, "2024-06-15 08:02:44"},
		{"rotated.heic", 756, 1008, 360, 480, "2024-06-14 12:31:07"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			out, err := p.Process(context.Background(), apptest.Photo(t, tc.file))
			if err != nil {
				t.Fatalf("Process = %v", err)
			}
			if out.Width != tc.w || out.Height != tc.h || out.ThumbWidth != tc.tw || out.ThumbHeight != tc.th {
				t.Errorf("sizes = %dx%d and %dx%d, want %dx%d and %dx%d", out.Width, out.Height, out.ThumbWidth, out.ThumbHeight, tc.w, tc.h, tc.tw, tc.th)
			}
			if got := out.Taken.Format(time.DateTime); got != tc.taken {
				t.Errorf("capture time = %s, want %s", got, tc.taken)
			}
			for name, b := range map[string][]byte{"display": out.Display, "thumb": out.Thumb} {
				checkNoMetadata(t, name, b, false)
				img, err := jpeg.Decode(bytes.NewReader(b))
				if err != nil {
					t.Fatalf("%s is not a JPEG: %v", name, err)
				}
				checkUpright(t, name, img)
			}
		})
	}
	if st := d.Status(); st.Decodes != 2 || st.State != "ready" || st.PID == 0 {
		t.Errorf("status = %+v, want 2 decodes, ready, a pid", st)
	}
}

// TestHEICKilled: a decode past its time limit, then one past its memory
// limit, are killed and refused with their messages; the next photo gets
// a fresh worker and goes through.
func TestHEICKilled(t *testing.T) {
	needHEIC(t)
	p, d := heicPipeline(t, nil)
	heic := apptest.Photo(t, "photo.heic")
	for _, tc := range []struct {
		limits photo.HEICLimits
		want   error
	}{
		{photo.HEICLimits{Timeout: 300 * time.Millisecond, Memory: photo.DefaultHEICMemory}, photo.ErrHEICTimeout},
		{photo.HEICLimits{Timeout: time.Minute, Memory: 120 << 20}, photo.ErrHEICMemory},
	} {
		d.SetLimits(tc.limits)
		if _, err := p.Process(context.Background(), heic); !errors.Is(err, tc.want) {
			t.Errorf("Process with %+v = %v, want %v", tc.limits, err, tc.want)
		}
	}
	if st := d.Status(); st.Killed != 2 || st.State != "not started" {
		t.Errorf("status after the kills = %+v, want 2 killed, no worker", st)
	}
	d.SetLimits(photo.DefaultHEICLimits())
	if out, err := p.Process(context.Background(), apptest.Photo(t, "rotated.heic")); err != nil || out.Height != 1008 {
		t.Fatalf("the next HEIC = %v, %v; want it stored", out, err)
	}
}

// TestHEICRefusals need no decode: brands the decoder cannot read, a size
// over the limits read from the ispe box, and a worker that cannot start
// (a clear error and the monitor's state, at once, not a timeout).
func TestHEICRefusals(t *testing.T) {
	t.Parallel()
	heic := apptest.Photo(t, "photo.heic")
	mif1 := append([]byte{}, heic...)
	copy(mif1[8:12], "mif1")
	if _, err := photo.Sniff(mif1); !errors.Is(err, photo.ErrHEIFBrand) {
		t.Errorf("Sniff(brand mif1) = %v, want ErrHEIFBrand", err)
	}
	for _, brand := range []string{"heic", "heix"} {
		b := append([]byte{}, heic[:16]...)
		copy(b[8:12], brand)
		if f, err := photo.Sniff(b); f != photo.HEIC || err != nil {
			t.Errorf("Sniff(brand %s) = %q, %v; want heic", brand, f, err)
		}
	}

	exitAtOnce := func() *exec.Cmd { return exec.Command("false") }
	p, d := heicPipeline(t, exitAtOnce)
	huge := append([]byte{}, heic...)
	i := bytes.Index(huge, []byte("ispe"))
	copy(huge[i+8:], []byte{0, 0, 0x4E, 0x20}) // width 20000
	if _, err := p.Process(context.Background(), huge); !errors.Is(err, photo.ErrTooLarge) {
		t.Errorf("Process(20000 px wide) = %v, want ErrTooLarge", err)
	}
	start := time.Now()
	_, err := p.Process(context.Background(), heic)
	if !errors.Is(err, photo.ErrHEICUnavailable) {
		t.Fatalf("Process with a worker that exits = %v, want ErrHEICUnavailable", err)
	}
	if time.Since(start) > 30*time.Second {
		t.Errorf("the failed start took %v: it should be reported at once", time.Since(start))
	}
	if st := d.Status(); st.State != "failed" || st.StartFailures != 1 || st.LastError == "" {
		t.Errorf("status = %+v, want failed with its reason", st)
	}
	if st := d.Status(); st.LastError != "" && !bytes.Contains([]byte(st.LastError), []byte("could not start")) {
		t.Errorf("last error = %q", st.LastError)
	}
}

// TestHEICQueue: one decode at a time; a second HEIC waits the decoder's
// wait, then is refused with ErrBusy (a 503 with Retry-After in the app),
// while the first goes through.
func TestHEICQueue(t *testing.T) {
	needHEIC(t)
	d := photo.NewHEICDecoder(nil, photo.DefaultHEICLimits(), 200*time.Millisecond, slog.New(slog.DiscardHandler))
	t.Cleanup(func() { d.Close() })
	p := photo.NewPipeline(photo.DefaultBudget, time.Minute).WithHEIC(d)
	heic := apptest.Photo(t, "photo.heic")
	first := make(chan error, 1)
	go func() {
		_, err := p.Process(context.Background(), heic)
		first <- err
	}()
	for deadline := time.Now().Add(time.Minute); d.Status().State != "decoding"; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the first decode never started: %+v", d.Status())
		}
	}
	if _, err := p.Process(context.Background(), heic); !errors.Is(err, photo.ErrBusy) {
		t.Errorf("second HEIC during a decode = %v, want ErrBusy", err)
	}
	if err := <-first; err != nil {
		t.Errorf("first HEIC = %v", err)
	}
}

// TestHEICLongMessage: a 'D' answer with a message longer than what is
// kept of it is read whole, so the next answer is read from its start:
// both photos are refused as damaged by the same worker.
func TestHEICLongMessage(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p, d := heicPipeline(t, func() *exec.Cmd { return exec.Command(exe, "fake-heic-worker") })
	heic := apptest.Photo(t, "photo.heic")
	var pid int
	for i := range 2 {
		if _, err := p.Process(context.Background(), heic); !errors.Is(err, photo.ErrDamaged) {
			t.Errorf("Process #%d = %v, want ErrDamaged", i+1, err)
		}
		st := d.Status()
		if i == 0 {
			pid = st.PID
		}
		if st.State != "ready" || st.PID == 0 || st.PID != pid {
			t.Errorf("status after photo #%d = %+v, want the first worker (pid %d) ready", i+1, st, pid)
		}
	}
}

// TestHEICCancelled: an upload cancelled mid-decode stops the worker and
// is counted as cancelled, not as a kill for time or memory; until the
// round trip ends, the decoder waits without spinning. The worker here
// greets, then leaves a child holding its stdin and stderr, so the round
// trip ends only when that child exits, 1.5 s after the start. Not
// parallel: it measures this process's CPU time.
func TestHEICCancelled(t *testing.T) {
	script := `printf 'ndiro heic-worker 1\n'; exec 3<&0; sleep 1.5 <&3 >/dev/null & wait`
	p, d := heicPipeline(t, func() *exec.Cmd { return exec.Command("sh", "-c", script) })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for d.Status().State != "decoding" {
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(100 * time.Millisecond)
		cancel()
	}()
	before := cpuTime(t)
	start := time.Now()
	_, err := p.Process(ctx, apptest.Photo(t, "photo.heic"))
	cpu, wall := cpuTime(t)-before, time.Since(start)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Process cancelled = %v, want context.Canceled", err)
	}
	if wall < time.Second {
		t.Fatalf("Process returned after %v: the worker's child should hold it about 1.5 s", wall)
	}
	if cpu > wall/3 {
		t.Errorf("Process used %v of CPU in %v: the decoder spun while it waited", cpu, wall)
	}
	if st := d.Status(); st.Killed != 0 || st.Cancelled != 1 || st.LastError != "" || st.State != "not started" {
		t.Errorf("status = %+v, want 1 cancelled, 0 killed, no error, no worker", st)
	}
}

// cpuTime is the user and system CPU time this process has used.
func cpuTime(t testing.TB) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
