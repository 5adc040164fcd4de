# ndiro: `make run` starts local mode, `make test` runs every test.
GO ?= go
PKGS := ./...

.PHONY: run demo screenshots test crash check bench load release e2e fmt vet

## run: start ndiro in local mode (no configuration, data under ./var)
run:
	@$(GO) build -o bin/ndiro-dev ./cmd/ndiro
	@exec ./bin/ndiro-dev

## demo: local mode with a demo owner's six weeks of meals (generated
## photos, notes, numbers) and a share link, in its own data dir
## (./var-demo), seeded on the first start only
demo:
	@$(GO) build -o bin/ndiro-dev ./cmd/ndiro
	@NDIRO_DEMO=1 NDIRO_DATA_DIR=./var-demo exec ./bin/ndiro-dev

## screenshots: every main page at 390x844 and 1280x800, light and dark,
## written to ./screenshots by the browser test
screenshots:
	@mkdir -p screenshots
	NDIRO_SCREENSHOTS=$(CURDIR)/screenshots $(GO) test -count=1 -run '^TestBrowserPages$$' -v ./internal/server

## test: every test, with the race detector; needs no network
test:
	$(GO) test -race -count=1 $(PKGS)

## crash: the long crash test: several runs on one data dir, each a larger
## burst of changes, kill -9 mid-burst, restart and check (CI runs it after test)
crash:
	NDIRO_TEST_CRASH_LONG=1 $(GO) test -race -count=1 -run '^TestLocalModeSurvivesKill9Long$$' -v ./cmd/ndiro

## check: formatting, vet, then the tests
check:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(MAKE) vet
	$(MAKE) test

## bench: speed and memory benchmarks
bench:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

## load: a minute of mixed traffic (month pages, cached photos, 304s,
## uploads, share views, edits) against local mode on 127.0.0.1 at
## concurrency 50, then requests/s, p50/p99 per route, 5xx, peak RSS and
## goroutines; fails on a 5xx (LOAD_FLAGS=-h lists the knobs)
load:
	@$(GO) build -o bin/ndiro-dev ./cmd/ndiro
	@$(GO) build -o bin/ndiro-load ./cmd/ndiro-load
	./bin/ndiro-load -bin bin/ndiro-dev -photos testdata/photos $(LOAD_FLAGS)

## e2e: the release binary in AWS mode against dynalite, s3rver and
## oidc-provider from npm, each its own process (needs Node and npm)
e2e: release
	./e2e/run.sh

## release: the static binary deploy/Dockerfile builds (same command), into bin/ndiro
release:
	CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o bin/ndiro ./cmd/ndiro

fmt:
	gofmt -w $$(git ls-files '*.go')

vet:
	$(GO) vet $(PKGS)
	$(GO) vet -tags e2e ./e2e
