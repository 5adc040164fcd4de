package cloud

import (
	"net/http"
	"testing"

	"ndiro/internal/localenv"
	"ndiro/internal/memnet"
)

// inProcess serves h on an in-memory listener for t and returns the
// endpoint the SDK clients reach it at: no port is opened.
func inProcess(t *testing.T, name string, h http.Handler) localenv.Endpoint {
	t.Helper()
	l := memnet.Listen(name)
	srv := &http.Server{Handler: h}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return localenv.Endpoint{URL: "http://" + name, Dial: l.DialContext}
}
