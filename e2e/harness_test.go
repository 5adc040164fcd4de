//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"math/big"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"ndiro/internal/apptest"
)

// settings are what run.sh hands the test: where the three servers listen,
// the provider's client, the proxy's address and the binary.
type settings struct {
	Bin          string // NDIRO_E2E_BIN: the release binary
	DynamoDB     string // NDIRO_E2E_DYNAMODB: dynalite's endpoint
	S3           string // NDIRO_E2E_S3: s3rver's endpoint
	Issuer       string // NDIRO_E2E_OIDC_ISSUER: oidc-provider's issuer
	StrictIssuer string // NDIRO_E2E_OIDC_STRICT_ISSUER: one that sends the email only from userinfo
	ClientID     string // NDIRO_E2E_OIDC_CLIENT_ID
	ClientSecret string // NDIRO_E2E_OIDC_CLIENT_SECRET
	ProxyAddr    string // NDIRO_E2E_PROXY_ADDR: host:port the TLS proxy must use
}

func loadSettings(t *testing.T) settings {
	t.Helper()
	var missing []string
	get := func(k string) string {
		v := os.Getenv(k)
		if v == "" {
			missing = append(missing, k)
		}
		return v
	}
	s := settings{
		Bin:          get("NDIRO_E2E_BIN"),
		DynamoDB:     get("NDIRO_E2E_DYNAMODB"),
		S3:           get("NDIRO_E2E_S3"),
		Issuer:       get("NDIRO_E2E_OIDC_ISSUER"),
		StrictIssuer: get("NDIRO_E2E_OIDC_STRICT_ISSUER"),
		ClientID:     get("NDIRO_E2E_OIDC_CLIENT_ID"),
		ClientSecret: get("NDIRO_E2E_OIDC_CLIENT_SECRET"),
		ProxyAddr:    get("NDIRO_E2E_PROXY_ADDR"),
	}
	if len(missing) > 0 {
		t.Fatalf("%s not set: run this test with make e2e", strings.Join(missing, ", "))
	}
	return s
}

// Static credentials for both servers: s3rver accepts only S3RVER/S3RVER,
// dynalite accepts anything.
const accessKey, secretKey, region = "S3RVER", "S3RVER", "eu-central-1"

// clients returns SDK clients for dynalite and s3rver, built by hand so the
// test never depends on the machine's AWS settings.
func clients(s settings) (*dynamodb.Client, *s3.Client) {
	cfg := aws.Config{
		Region:      region,
		Credentials: credentials.NewStaticCredentialsProvider(accessKey, secretKey, ""),
	}
	db := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(s.DynamoDB) })
	s3c := s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.BaseEndpoint = aws.String(s.S3)
		o.UsePathStyle = true
	})
	return db, s3c
}

// syncBuffer is a bytes.Buffer safe for a process writing while the test
// reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// process is the running binary.
type process struct {
	cmd            *exec.Cmd
	stdout, stderr *syncBuffer
	done           chan struct{}
	err            error // from Wait, once done is closed
}

// start runs the binary with exactly env (nothing inherited but PATH).
func start(t *testing.T, bin string, env []string) *process {
	t.Helper()
	p := &process{stdout: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(bin)
	p.cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

// exited waits up to d for the process to end and reports whether it did.
func (p *process) exited(d time.Duration) bool {
	select {
	case <-p.done:
		return true
	case <-time.After(d):
		return false
	}
}

// exitCode is the exit code after exited returned true.
func (p *process) exitCode() int {
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	if p.err != nil {
		return -1
	}
	return 0
}

// listenAddr waits for the JSON "listening" log line and returns its addr.
func (p *process) listenAddr(t *testing.T) string {
	t.Helper()
	return p.loggedAddr(t, "listening")
}

// loggedAddr waits for the JSON log line whose msg is msg ("listening",
// "metrics listening") and returns its addr.
func (p *process) loggedAddr(t *testing.T, msg string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, l := range logLines(p.stdout.String()) {
			var rec struct{ Msg, Addr string }
			if json.Unmarshal([]byte(l), &rec) == nil && rec.Msg == msg && rec.Addr != "" {
				return rec.Addr
			}
		}
		if p.exited(100 * time.Millisecond) {
			t.Fatalf("ndiro exited with %d before %q\nstdout:\n%s\nstderr:\n%s", p.exitCode(), msg, p.stdout, p.stderr)
		}
	}
	t.Fatalf("ndiro logged no %q line within 30 s\nstdout:\n%s\nstderr:\n%s", msg, p.stdout, p.stderr)
	return ""
}

// terminate sends SIGTERM.
func (p *process) terminate(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
}

// logLines splits output into its non-empty lines.
func logLines(out string) []string {
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// selfSigned returns a throwaway certificate for 127.0.0.1, valid for an
// hour, and a pool that trusts it.
func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "ndiro e2e proxy"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:             time.Now().Add(-time.Minute),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}

// tlsConfig trusts only pool: the browser knows the proxy's throwaway
// certificate and nothing else.
func tlsConfig(pool *x509.CertPool) *tls.Config { return &tls.Config{RootCAs: pool} }

// proxy is the TLS-terminating reverse proxy in front of the app.
type proxy struct{ target atomic.Pointer[url.URL] }

// forward points the proxy at the app listening on addr (host:port).
func (p *proxy) forward(addr string) { p.target.Store(&url.URL{Scheme: "http", Host: addr}) }

// startProxy serves TLS on addr and forwards to the app set with forward,
// as the reverse proxy of deploy/README.md does: the Host header passes
// through, X-Forwarded-* are set.
func startProxy(t *testing.T, addr string, cert tls.Certificate) *proxy {
	t.Helper()
	p := &proxy{}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(p.target.Load())
			r.Out.Host = r.In.Host
			r.SetXForwarded()
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			t.Logf("proxy: %s %s: %v", r.Method, r.URL.Path, err)
			w.WriteHeader(http.StatusBadGateway)
		},
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("proxy listen on %s: %v", addr, err)
	}
	srv := &http.Server{Handler: rp, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}, ReadHeaderTimeout: 10 * time.Second}
	go srv.ServeTLS(ln, "", "")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	return p
}

// recorder is a browser's transport: it trusts the proxy's certificate,
// sends Origin on form posts as browsers do, and records every session
// and sign-in attempt cookie value the app sets, so the logs can be
// searched for them.
type recorder struct {
	base http.RoundTripper

	mu       sync.Mutex
	sessions []string
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPost && req.Header.Get("Origin") == "" {
		req = req.Clone(req.Context())
		req.Header.Set("Origin", req.URL.Scheme+"://"+req.URL.Host)
	}
	resp, err := r.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	for _, c := range resp.Cookies() {
		if (c.Name == "ndiro_session" || strings.HasPrefix(c.Name, "ndiro_signin_")) && c.Value != "" {
			r.mu.Lock()
			r.sessions = append(r.sessions, c.Value)
			r.mu.Unlock()
		}
	}
	return resp, nil
}

func (r *recorder) sessionValues() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.sessions...)
}

// testJPEG returns a w×h JPEG with a gradient, as a phone's photo would be
// (smaller).
func testJPEG(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, color.RGBA{uint8(x * 255 / w), uint8(y * 255 / h), 96, 255})
		}
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 85}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// cookie returns the Set-Cookie named name in resp, or nil.
func cookie(resp *apptest.Response, name string) *http.Cookie {
	for _, c := range resp.Cookies() {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// describe is a cookie's attributes in one line, for messages.
func describe(c *http.Cookie) string {
	if c == nil {
		return "no cookie"
	}
	sameSite := map[http.SameSite]string{http.SameSiteLaxMode: "Lax", http.SameSiteStrictMode: "Strict", http.SameSiteNoneMode: "None"}[c.SameSite]
	if sameSite == "" {
		sameSite = "unset"
	}
	return fmt.Sprintf("Secure=%v HttpOnly=%v SameSite=%s Path=%q", c.Secure, c.HttpOnly, sameSite, c.Path)
}
