package photo

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gen2brain/heic"
)

// HEIC decoding runs in a worker process of the same binary ("ndiro
// heic-worker"), never in the web server. The decoder is libheif compiled
// to WebAssembly (github.com/gen2brain/heic), run by wazero: one
// 12-megapixel photo takes about 2 s of CPU and 270–375 MB of resident
// memory, and a decode cannot be interrupted (heic.Decode takes no
// context) and stalls other goroutines while it runs. So it runs in its
// own process, which can be killed to bound its time and memory, and
// whose memory is not the server's. The server's HEICDecoder starts the
// worker on first use and keeps it warm, feeds it one file at a time over
// its stdin, reads the two finished JPEG copies from its stdout, and kills
// it (restarting it for the next photo) when a decode runs past its time
// or memory limit.

// Errors of HEIC decoding; their text is written for the person uploading.
var (
	// ErrHEICUnavailable: the decoder process could not be started (the
	// admin monitor says why).
	ErrHEICUnavailable = errors.New("HEIC photos can't be read right now: the HEIC decoder could not start. Nothing was saved; send the photo as JPEG (on an iPhone, share or export it as JPEG), and tell whoever runs this site")
	// ErrHEICTimeout: the decode ran past the time limit and was stopped.
	ErrHEICTimeout = errors.New("this HEIC photo took too long to read and was given up. Nothing was saved; try again, or send it as JPEG")
	// ErrHEICMemory: the decode needed more memory than the limit.
	ErrHEICMemory = errors.New("this HEIC photo needed too much memory to read and was given up. Nothing was saved; send it as JPEG, or at a smaller size")
	// ErrHEICFailed: the worker stopped or answered nonsense mid-decode.
	ErrHEICFailed = errors.New("the HEIC decoder stopped while reading this photo. Nothing was saved; try again, or send it as JPEG")
)

// IsHEICBrand reports whether b is an ftyp major brand the decoder reads:
// "heic" (the iPhone camera's) and "heix" (10-bit), which it reads through
// heic.Decode. Other HEIF brands (mif1, msf1, hevc, avif, …) fail in it.
func IsHEICBrand(b string) bool { return b == "heic" || b == "heix" }

// HEICLimits bound one decode in the worker.
type HEICLimits struct {
	// Timeout is the longest one decode may take, start-up excluded.
	Timeout time.Duration
	// Memory is the most resident memory (RSS, bytes) the worker may use;
	// checked every 50 ms while it decodes (Linux /proc). Its GOMEMLIMIT
	// is set a quarter below.
	Memory int64
}

// Default HEIC limits: 60 s (a 12 MP photo takes 2–5 s) and 640 MiB (a 12
// MP decode peaks at 270–375 MB in the worker).
const (
	DefaultHEICTimeout = 60 * time.Second
	DefaultHEICMemory  = 640 << 20
)

// DefaultHEICLimits returns DefaultHEICTimeout and DefaultHEICMemory.
func DefaultHEICLimits() HEICLimits {
	return HEICLimits{Timeout: DefaultHEICTimeout, Memory: DefaultHEICMemory}
}

// heicIdle is how long a warm worker waits for the next photo before it is
// stopped, giving its memory (~150 MB once it has decoded) back.
const heicIdle = 10 * time.Minute

// heicStart bounds the worker's start-up: process start and compiling the
// decoder (~1 s; slower under the race detector).
const heicStart = 2 * time.Minute

// HEICStatus is the decoder's state for the admin monitor.
type HEICStatus struct {
	// State is "not started", "starting", "ready", "decoding" or "failed".
	State string
	// PID is the worker's process ID while it runs, else 0.
	PID int
	// Decodes counts photos decoded; Killed the decodes stopped for time
	// or memory; Cancelled the decodes stopped because their upload was
	// (the uploader went away); StartFailures the starts that failed.
	Decodes, Killed, Cancelled, StartFailures int
	// LastError is the last start failure or kill for time or memory, ""
	// if none.
	LastError string
}

// HEICDecoder runs HEIC decodes in the worker process, one at a time.
type HEICDecoder struct {
	// name ("heic", "webp") starts the worker's log messages, and hello
	// is the greeting it must send.
	name, hello string
	command     func() *exec.Cmd
	wait        time.Duration
	log         *slog.Logger
	slot        chan struct{} // one decode at a time

	mu     sync.Mutex
	limits HEICLimits
	w      *heicWorker
	status HEICStatus
	idle   *time.Timer
}

// heicWorker is one running worker process.
type heicWorker struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	done chan struct{} // closed when the process has exited
}

// NewHEICDecoder returns a decoder that runs command() as its worker (nil:
// this executable with the argument "heic-worker"), waits at most wait
// for its turn (ErrBusy after), and logs worker output and kills to log.
func NewHEICDecoder(command func() *exec.Cmd, limits HEICLimits, wait time.Duration, log *slog.Logger) *HEICDecoder {
	return newWorkerProcess("heic", heicHello, command, limits, wait, log)
}

// newWorkerProcess returns the runner of a worker process named name
// ("heic": "ndiro heic-worker", "webp": "ndiro webp-worker"), which must
// greet with hello; command nil runs this executable with the argument
// name + "-worker".
func newWorkerProcess(name, hello string, command func() *exec.Cmd, limits HEICLimits, wait time.Duration, log *slog.Logger) *HEICDecoder {
	if command == nil {
		command = func() *exec.Cmd {
			exe, err := os.Executable()
			if err != nil {
				exe = os.Args[0]
			}
			return exec.Command(exe, name+"-worker")
		}
	}
	return &HEICDecoder{name: name, hello: hello, command: command, wait: wait, log: log, slot: make(chan struct{}, 1),
		limits: limits, status: HEICStatus{State: "not started"}}
}

// SetLimits changes the limits from the next decode on (operators, tests).
func (d *HEICDecoder) SetLimits(l HEICLimits) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.limits = l
}

// Status returns the decoder's state for the admin monitor.
func (d *HEICDecoder) Status() HEICStatus {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.status
}

// Close stops the worker, if it runs.
func (d *HEICDecoder) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stopLocked()
	return nil
}

// decode turns the HEIC file of size bytes read from src into the two
// stored copies in the worker, tagged for gamut. The file is streamed to
// the worker from src, never copied into the server's memory. It waits for its turn (ErrBusy past the decoder's
// wait, or ctx's error), starts the worker if need be
// (ErrHEICUnavailable), and kills it past the limits (ErrHEICTimeout,
// ErrHEICMemory); a worker that cannot read the file answers ErrDamaged.
func (d *HEICDecoder) decode(ctx context.Context, src io.Reader, size int64, g Gamut) (*Processed, error) {
	p, err := d.run(ctx, func(w *heicWorker) (any, error) { return w.roundTrip(src, size, g) })
	if err != nil {
		return nil, err
	}
	return p.(*Processed), nil
}

// run makes one round trip with the worker: it waits for its turn
// (ErrBusy past the decoder's wait, or ctx's error), starts the worker if
// need be (ErrHEICUnavailable), runs trip on it, and kills it past the
// limits (ErrHEICTimeout, ErrHEICMemory) or when ctx ends; an answer
// saying the input cannot be read is ErrDamaged.
func (d *HEICDecoder) run(ctx context.Context, trip func(*heicWorker) (any, error)) (any, error) {
	wctx, cancel := context.WithTimeout(ctx, d.wait)
	defer cancel()
	select {
	case d.slot <- struct{}{}:
	case <-wctx.Done():
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, ErrBusy
	}
	defer func() { <-d.slot }()

	d.mu.Lock()
	limits := d.limits
	if d.idle != nil {
		d.idle.Stop()
	}
	w, err := d.startLocked(limits)
	if err != nil {
		d.mu.Unlock()
		return nil, err
	}
	d.status.State = "decoding"
	d.mu.Unlock()

	type answer struct {
		p   any
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		p, err := trip(w)
		ch <- answer{p, err}
	}()
	timer := time.NewTimer(limits.Timeout)
	defer timer.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	// cancelled is ctx.Done() until it fires, then nil: a closed channel
	// in the select would be ready on every turn, spinning the loop until
	// the killed worker's answer arrives.
	cancelled := ctx.Done()
	var killed error
	for {
		select {
		case a := <-ch:
			d.mu.Lock()
			defer d.mu.Unlock()
			if killed != nil {
				if errors.Is(killed, ErrHEICTimeout) || errors.Is(killed, ErrHEICMemory) {
					d.status.Killed++
					d.status.LastError = killed.Error()
					d.log.Warn(d.name+" worker stopped", "reason", reason(killed), "pid", w.cmd.Process.Pid)
				} else {
					d.status.Cancelled++
					d.log.Info(d.name+" worker stopped", "reason", reason(killed), "pid", w.cmd.Process.Pid)
				}
				d.stopLocked()
				return nil, killed
			}
			if a.err != nil && !errors.Is(a.err, ErrDamaged) {
				d.status.LastError = a.err.Error()
				d.log.Error(d.name+" worker failed", "err", a.err)
				d.stopLocked()
				return nil, fmt.Errorf("%w (%v)", ErrHEICFailed, a.err)
			}
			if a.err == nil {
				d.status.Decodes++
			}
			d.status.State = "ready"
			d.idle = time.AfterFunc(heicIdle, func() {
				d.mu.Lock()
				defer d.mu.Unlock()
				if d.w == w && d.status.State == "ready" {
					d.stopLocked()
				}
			})
			return a.p, a.err
		case <-timer.C:
			if killed == nil {
				killed = ErrHEICTimeout
				w.cmd.Process.Kill()
			}
		case <-tick.C:
			if killed == nil && limits.Memory > 0 && rss(w.cmd.Process.Pid) > limits.Memory {
				killed = ErrHEICMemory
				w.cmd.Process.Kill()
			}
		case <-cancelled:
			// The uploader went away: nobody will read this photo, so the
			// worker is killed at once, giving its CPU and memory back (the
			// next photo starts a new one), and the loop waits for the
			// round trip to end on the closed pipes.
			cancelled = nil
			if killed == nil {
				killed = ctx.Err()
				w.cmd.Process.Kill()
			}
		}
	}
}

func reason(err error) string {
	switch {
	case errors.Is(err, ErrHEICTimeout):
		return "time"
	case errors.Is(err, ErrHEICMemory):
		return "memory"
	}
	return "cancelled"
}

// workerEnvKeys are the variables of the server's environment a HEIC
// worker gets: what the Go runtime, a test's coverage and the race
// detector read. Nothing else goes to it: the server's environment holds
// secrets (the OIDC client secret, AWS credentials) that a process
// decoding untrusted files has no use for.
var workerEnvKeys = map[string]bool{
	"PATH": true, "HOME": true, "TMPDIR": true, "TZ": true,
	"GODEBUG": true, "GOTRACEBACK": true, "GORACE": true, "GOCOVERDIR": true,
}

// workerEnv returns the entries of environ ("KEY=value") whose keys are in
// workerEnvKeys, in their order.
func workerEnv(environ []string) []string {
	var env []string
	for _, kv := range environ {
		if k, _, ok := strings.Cut(kv, "="); ok && workerEnvKeys[k] {
			env = append(env, kv)
		}
	}
	return env
}

// startLocked returns the running worker, starting one if there is none
// (d.mu held).
func (d *HEICDecoder) startLocked(limits HEICLimits) (*heicWorker, error) {
	if d.w != nil {
		select {
		case <-d.w.done: // died while idle
			d.w = nil
		default:
			return d.w, nil
		}
	}
	d.status.State = "starting"
	cmd := d.command()
	cmd.Env = append(workerEnv(os.Environ()), "GOMAXPROCS=1")
	if limits.Memory > 0 {
		cmd.Env = append(cmd.Env, "GOMEMLIMIT="+strconv.FormatInt(limits.Memory/4*3, 10))
	}
	cmd.Stderr = logWriter{d.log, d.name + " worker says"}
	fail := func(err error) (*heicWorker, error) {
		d.status.State, d.status.PID = "failed", 0
		d.status.StartFailures++
		d.status.LastError = "could not start: " + err.Error()
		d.log.Error(d.name+" worker did not start", "err", err)
		return nil, fmt.Errorf("%w (%v)", ErrHEICUnavailable, err)
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		return fail(err)
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		return fail(err)
	}
	if err := cmd.Start(); err != nil {
		return fail(err)
	}
	w := &heicWorker{cmd: cmd, in: in, out: bufio.NewReader(outPipe), done: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(w.done)
	}()
	ready := make(chan error, 1)
	go func() {
		line, err := w.out.ReadString('\n')
		if err == nil && line != d.hello {
			err = fmt.Errorf("unexpected greeting %.40q", line)
		}
		ready <- err
	}()
	select {
	case err = <-ready:
	case <-time.After(heicStart):
		err = errors.New("no greeting within " + heicStart.String())
	}
	if err != nil {
		cmd.Process.Kill()
		<-w.done
		if errors.Is(err, io.EOF) {
			err = fmt.Errorf("the worker exited at start (%v)", cmd.ProcessState)
		}
		return fail(err)
	}
	d.w = w
	d.status.State, d.status.PID = "ready", cmd.Process.Pid
	return w, nil
}

// stopLocked ends the worker, if any (d.mu held).
func (d *HEICDecoder) stopLocked() {
	if d.w == nil {
		return
	}
	d.w.in.Close()
	d.w.cmd.Process.Kill()
	<-d.w.done
	d.w = nil
	d.status.PID = 0
	if d.status.State != "failed" {
		d.status.State = "not started"
	}
}

// rss returns the resident memory of process pid in bytes (VmRSS), 0 if
// it cannot be read.
func rss(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(v)
			if len(f) == 2 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n << 10
			}
		}
	}
	return 0
}

// logWriter logs what the worker writes to stderr (libheif's warnings,
// a panic), a line at a time.
type logWriter struct {
	log *slog.Logger
	msg string
}

func (l logWriter) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		l.log.Warn(l.msg, "line", line)
	}
	return len(p), nil
}

// The worker protocol, over the worker's stdin and stdout. After start-up
// the worker writes heicHello. A request is 'H', the gamut byte, the file's
// length (uint64, big-endian) and its bytes. An answer is 'K' and the
// display and thumbnail sizes (four uint32) and the two JPEGs (each a
// uint64 length and its bytes), or 'D' (the file cannot be decoded) or 'E'
// (anything else) followed by a message (uint32 length and text).
const heicHello = "ndiro heic-worker 1\n"

// heicCopyBuffer is the buffer a request's file is streamed to the worker
// through, in bytes.
const heicCopyBuffer = 32 << 10

// maxHEICFile bounds a request (the form's limit is lower).
const maxHEICFile = 64 << 20

// maxHEICMessage bounds the message of a 'D' or 'E' answer; the worker's
// are an error's text, far shorter.
const maxHEICMessage = 64 << 10

// roundTrip sends one request, the file streamed from src through a
// buffer of heicCopyBuffer bytes, and reads the answer.
func (w *heicWorker) roundTrip(src io.Reader, size int64, g Gamut) (*Processed, error) {
	hdr := []byte{'H', byte(g)}
	hdr = binary.BigEndian.AppendUint64(hdr, uint64(size))
	if _, err := w.in.Write(hdr); err != nil {
		return nil, fmt.Errorf("write to worker: %w", err)
	}
	// writerOnly hides the pipe's ReadFrom, which would allocate a
	// buffer of its own.
	type writerOnly struct{ io.Writer }
	if _, err := io.CopyBuffer(writerOnly{w.in}, io.LimitReader(src, size), make([]byte, heicCopyBuffer)); err != nil {
		return nil, fmt.Errorf("write to worker: %w", err)
	}
	kind, err := w.out.ReadByte()
	if err != nil {
		return nil, fmt.Errorf("read from worker: %w", err)
	}
	switch kind {
	case 'K':
		var dims [16]byte
		if _, err := io.ReadFull(w.out, dims[:]); err != nil {
			return nil, fmt.Errorf("read from worker: %w", err)
		}
		p := &Processed{Gamut: g}
		p.Width, p.Height = int(binary.BigEndian.Uint32(dims[0:])), int(binary.BigEndian.Uint32(dims[4:]))
		p.ThumbWidth, p.ThumbHeight = int(binary.BigEndian.Uint32(dims[8:])), int(binary.BigEndian.Uint32(dims[12:]))
		if p.Display, err = readBlob(w.out); err != nil {
			return nil, err
		}
		if p.Thumb, err = readBlob(w.out); err != nil {
			return nil, err
		}
		if !bytes.HasPrefix(p.Display, []byte{0xFF, 0xD8}) || !bytes.HasPrefix(p.Thumb, []byte{0xFF, 0xD8}) {
			return nil, errors.New("worker answered something that is not a JPEG")
		}
		return p, nil
	case 'D', 'E':
		msg, err := readMessage(w.out)
		if err != nil {
			return nil, err
		}
		if kind == 'D' {
			return nil, fmt.Errorf("%w (%s)", ErrDamaged, msg)
		}
		return nil, fmt.Errorf("worker: %s", msg)
	}
	return nil, fmt.Errorf("worker answered %q", kind)
}

// readMessage reads a worker's error message: a 4-byte big-endian length,
// then that many bytes, at most maxHEICMessage. The whole message is read,
// so the next answer starts where it should; one too long to read is an
// error, which stops the worker. The text is cut to 4 KB for the log.
func readMessage(r io.Reader) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, fmt.Errorf("read from worker: %w", err)
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > maxHEICMessage {
		return nil, fmt.Errorf("worker answered a message of %d bytes", size)
	}
	msg := make([]byte, size)
	if _, err := io.ReadFull(r, msg); err != nil {
		return nil, fmt.Errorf("read from worker: %w", err)
	}
	return msg[:min(len(msg), 4096)], nil
}

// readBlob reads a worker's answer: an 8-byte big-endian length, then
// that many bytes, at most maxHEICFile.
func readBlob(r io.Reader) ([]byte, error) {
	var n [8]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, fmt.Errorf("read from worker: %w", err)
	}
	size := binary.BigEndian.Uint64(n[:])
	if size > maxHEICFile {
		return nil, fmt.Errorf("worker answered %d bytes", size)
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, fmt.Errorf("read from worker: %w", err)
	}
	return b, nil
}

// MaybeHEICWorker runs a worker instead of the tests when a test binary
// is started as "heic-worker" or "webp-worker" (the commands HEICDecoder
// and WebPEncoder run by default), and exits: call it first in TestMain
// of every test package whose tests decode HEIC or encode WebP through
// the app.
func MaybeHEICWorker() {
	if len(os.Args) < 2 {
		return
	}
	run := map[string]func(io.Reader, *os.File) error{"heic-worker": RunHEICWorker, "webp-worker": RunWebPWorker}[os.Args[1]]
	if run == nil {
		return
	}
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// RunHEICWorker is the worker process ("ndiro heic-worker"): it compiles
// the decoder, greets on out, then decodes one request from in at a time
// until in closes. The decoder's own output (libheif writes to stdout)
// goes to stderr, never into the answers. It returns nil when in is
// closed.
func RunHEICWorker(in io.Reader, out *os.File) error {
	// heic.Init captures os.Stdout for the WebAssembly module's output.
	os.Stdout = os.Stderr
	heic.Init()
	return serveRequests(in, out, heicHello, "heic worker", func(hdr [10]byte, br *bufio.Reader, bw *bufio.Writer) error {
		size := binary.BigEndian.Uint64(hdr[2:])
		if hdr[0] != 'H' || size > maxHEICFile {
			return fmt.Errorf("heic worker: bad request")
		}
		data := make([]byte, size)
		if _, err := io.ReadFull(br, data); err != nil {
			return fmt.Errorf("heic worker: read: %w", err)
		}
		p, err := decodeHEIC(data, Gamut(hdr[1]))
		data = nil
		return answer(bw, p, err)
	})
}

// serveRequests is a worker process's loop: it greets on out with hello,
// then reads one 10-byte request header from in at a time and hands it
// to handle, with br at the request's body and bw for the answer (flushed
// after each), until in closes, when it returns nil. name starts its
// read errors ("heic worker: read: …"); an error from handle ends it.
func serveRequests(in io.Reader, out *os.File, hello, name string, handle func(hdr [10]byte, br *bufio.Reader, bw *bufio.Writer) error) error {
	bw := bufio.NewWriter(out)
	if _, err := bw.WriteString(hello); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	br := bufio.NewReader(in)
	for {
		var hdr [10]byte
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("%s: read: %w", name, err)
		}
		if err := handle(hdr, br, bw); err != nil {
			return err
		}
		if err := bw.Flush(); err != nil {
			return err
		}
	}
}

// writeMessage writes an error answer as readMessage reads it: kind ('D'
// for a damaged file, 'E' for any other failure), a 4-byte big-endian
// length, then msg cut to 4 KB.
func writeMessage(w *bufio.Writer, kind byte, msg string) {
	msg = msg[:min(len(msg), 4096)]
	w.WriteByte(kind)
	w.Write(binary.BigEndian.AppendUint32(nil, uint32(len(msg))))
	w.WriteString(msg)
}

// decodeHEIC decodes data (already upright: libheif applies the
// container's rotation, and EXIF orientation is not applied on top) and
// makes the two copies as every photo gets them.
func decodeHEIC(data []byte, g Gamut) (p *Processed, err error) {
	defer func() {
		if r := recover(); r != nil {
			p, err = nil, fmt.Errorf("%w (decoder: %v)", ErrDamaged, r)
		}
	}()
	img, err := heic.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%w (%v)", ErrDamaged, err)
	}
	return finish(img, 0, g, nil)
}

func answer(w *bufio.Writer, p *Processed, err error) error {
	if err != nil {
		kind := byte('E')
		if errors.Is(err, ErrDamaged) {
			kind = 'D'
		}
		writeMessage(w, kind, err.Error())
		return w.Flush()
	}
	w.WriteByte('K')
	for _, v := range []int{p.Width, p.Height, p.ThumbWidth, p.ThumbHeight} {
		w.Write(binary.BigEndian.AppendUint32(nil, uint32(v)))
	}
	for _, b := range [][]byte{p.Display, p.Thumb} {
		w.Write(binary.BigEndian.AppendUint64(nil, uint64(len(b))))
		w.Write(b)
	}
	return w.Flush()
}
