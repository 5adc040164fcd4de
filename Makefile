# ndiro: `make run` starts local mode, `make test` runs the test suite
# (the longer suites browser, slow, crash, memory, import-memory, heic, imagebytes, lighthouse,
# e2e and faults have their own targets; CI runs them all).
GO ?= go
PKGS := ./...
# nodynamic: the HEIC decoder (github.com/gen2brain/heic) runs its
# WebAssembly build, never a libheif.so found on the machine, and the
# binary stays static. Every build and test uses it.
TAGS := nodynamic
# RACE: the race detector on ndiro's code and on every library it shares
# memory with. Compiled without its instrumentation: the image and
# compression codecs (pure transforms of buffers ndiro hands them, where
# the detector would only slow every pixel and byte loop five to ten
# times), and the in-process DynamoDB and S3 (reached only over HTTP, so
# no memory is shared with them). make race-full runs the packages that
# call the codecs with every package instrumented (CI runs it).
# Not skipped, though it shares no memory with ndiro: the WebAssembly
# runtime under the HEIC and WebP codecs (github.com/tetratelabs/wazero).
# It uses sync.Map, and the linker keeps one copy of each instantiation of
# a generic function for the whole binary: when it kept wazero's
# uninstrumented copy of sync.Map's internals, the detector no longer saw
# any sync.Map hand a value over, and reported races in encoding/json's,
# reflect's and the SDK's type caches in most test binaries, one run in
# two. A package skipped here must not use the standard library's generic
# synchronisation (sync.Map, atomic.Pointer, ...); any other generic it
# instantiates (minidyn's maps.Copy) may go unchecked in ndiro's own calls
# of the same shape too. SQLite's engine (github.com/ncruces/go-sqlite3-wasm,
# translated C, and julianday) joins them by that rule, not the driver
# around it (its own packages hold an atomic.Pointer): instrumented, a
# point read costs ten to twenty times as much, skipped about twice.
RACE_SKIP := image/... golang.org/x/image/... compress/... github.com/gen2brain/... github.com/truora/minidyn/... github.com/johannesboyne/gofakes3/... github.com/ncruces/go-sqlite3-wasm/... github.com/ncruces/julianday
RACE := -race $(foreach p,$(RACE_SKIP),-gcflags=$(p)=-race=false)

.PHONY: run demo screenshots test race-full dynamodb browser slow crash memory import-memory heic imagebytes lighthouse check bench load release e2e faults a11y fmt vet

## run: start ndiro in local mode (no configuration, data under ./var)
run:
	@$(GO) build -tags $(TAGS) -o bin/ndiro-dev ./cmd/ndiro
	@exec ./bin/ndiro-dev

## demo: local mode with a demo owner's six weeks of meals (generated
## photos, notes, numbers) and a share link, in its own data dir
## (./var-demo), seeded on the first start only
demo:
	@$(GO) build -tags $(TAGS) -o bin/ndiro-dev ./cmd/ndiro
	@NDIRO_DEMO=1 NDIRO_DATA_DIR=./var-demo exec ./bin/ndiro-dev

## screenshots: every main page at 390x844 and 1280x800, light and dark,
## written to ./screenshots by the browser test
screenshots:
	@mkdir -p screenshots
	NDIRO_TEST_BROWSER=1 NDIRO_SCREENSHOTS=$(CURDIR)/screenshots $(GO) test -tags $(TAGS) -count=1 -run '^TestBrowserPages$$' -v ./internal/server

## test: the test suite with the race detector; needs no network
## (-timeout 30m: under -race on a busy 2-core machine a package with
## browser tests can take longer than go test's default 10 minutes)
test:
	$(GO) test -tags $(TAGS) $(RACE) -count=1 -timeout 30m $(PKGS)

## race-full: the packages that hand buffers to the image and zip
## codecs (photo, meal, account, archive, share) with every package under
## the race detector, the codecs and emulators too (make test leaves them
## out: see RACE; CI runs it)
race-full:
	$(GO) test -tags $(TAGS) -race -count=1 -timeout 30m ./internal/photo ./internal/meal ./internal/account ./internal/archive ./internal/share

## dynamodb: the DynamoDB-touching packages again, against the DynamoDB
## at NDIRO_TEST_DYNAMODB_ENDPOINT (CI starts dynalite for it: stricter
## than minidyn on validation, 400 KB items and 1 MB pages)
dynamodb:
	@test -n "$$NDIRO_TEST_DYNAMODB_ENDPOINT" || { echo "set NDIRO_TEST_DYNAMODB_ENDPOINT (e.g. a dynalite server)"; exit 2; }
	$(GO) test -tags $(TAGS) $(RACE) -count=1 -timeout 30m -short ./internal/store/cloud ./internal/dynamo ./internal/invite ./internal/auth ./internal/meal ./internal/share ./internal/account ./internal/admin ./internal/user ./internal/lease ./internal/migrate

## browser: the browser tests (every TestBrowser…) in headless Chromium,
## with the race detector: every page held to the UI rules at a phone's
## and a desktop's size, photo slots, caching and colours, the page
## script's uploads, the offline outbox, share links; make test skips
## them (NDIRO_TEST_BROWSER; needs Chromium; CI runs it after test)
browser:
	NDIRO_TEST_BROWSER=1 $(GO) test -tags $(TAGS) $(RACE) -count=1 -timeout 30m -run '^TestBrowser' $(PKGS)

## slow: the pipeline's fixture test with the 12-megapixel phone photo
## (phone-portrait.jpg: upright, no metadata, its thumbnail as the
## reference), decoded in full under the race detector; make test skips
## it (NDIRO_TEST_SLOW; CI runs it after test)
slow:
	NDIRO_TEST_SLOW=1 $(GO) test -tags $(TAGS) $(RACE) -count=1 -run '^TestProcessFixtures$$' -v ./internal/photo

## crash: the long crash test: several runs on one data dir, each a larger
## burst of changes, kill -9 mid-burst, restart and check (CI runs it after test)
crash:
	NDIRO_TEST_CRASH_LONG=1 $(GO) test -tags $(TAGS) $(RACE) -count=1 -run '^TestLocalModeSurvivesKill9Long$$' -v ./cmd/ndiro

## memory: the upload memory harness: 20 phone photos and 4 large 16-bit
## PNGs at once, then 20 and 60 padded and metadata-heavy files of every
## format, into ndiro as a child process with the service's GOMEMLIMIT
## and GOGC; the peak RSS of each burst must stay within 256 MB (CI runs
## it after test)
memory:
	NDIRO_TEST_MEMORY=1 $(GO) test -tags $(TAGS) -count=1 -run '^TestUploadMemory$$' -v ./cmd/ndiro

## import-memory: a 200 MB import form streamed through the import's
## staging (multipart part read as it arrives, part objects of one
## buffer) into local mode's S3 on a data dir; the heap in use must grow
## by at most 128 MiB. Then hostile zips (bombs, a 100 MB meals.json, 100k
## entries, a directory claiming gigabytes, two end records, overlapping
## entries) staged and refused by archive.Open, the heap within 64 MiB
## each; then ndiro as a child process gets as many of the last two at
## once as its staging gate admits, its peak RSS within the unit's
## MemoryMax and its heap within 64 MiB an upload (CI runs it after memory)
import-memory:
	NDIRO_TEST_IMPORT_MEMORY=1 $(GO) test -tags $(TAGS) -count=1 -run '^TestImport(Upload|Refusal)Memory$$' -v ./internal/photo
	NDIRO_TEST_IMPORT_MEMORY=1 $(GO) test -tags $(TAGS) -count=1 -run '^TestImportMemory$$' -v ./cmd/ndiro

## heic: the tests that decode HEIC (about 2 s of CPU per 12-megapixel
## photo in the worker process), without the race detector: photo.heic and
## a rotated HEIC stored upright, decodes killed for time and memory, and
## owner photo latency (p99) while four HEIC uploads queue (CI runs it)
heic:
	NDIRO_TEST_HEIC=1 $(GO) test -tags $(TAGS) -count=1 -run 'HEIC' -v ./internal/photo ./internal/meal ./cmd/ndiro

## imagebytes: photo bytes of a 90-meal month of testdata's phone photos
## on a phone (390x844, 3x) and of the recipient's weeks on a desktop
## (1280x800), first screen and scrolled to the end, legacy copies
## against sized ones (JPEG and WebP through srcset): each at most 45 %
## (about 2 minutes; needs Chromium; CI runs it)
imagebytes:
	NDIRO_TEST_IMAGEBYTES=1 NDIRO_TEST_BROWSER=1 $(GO) test -tags $(TAGS) -count=1 -timeout 15m -run '^TestImageBytes$$' -v ./internal/server

## lighthouse: Lighthouse 12 (mobile) on the month, a meal and a share
## page: "Properly size images" and "Serve images in modern formats" must
## pass (needs Node, npm and Chromium; e2e/lighthouse.sh installs
## Lighthouse outside the repository; CI runs it)
lighthouse:
	./e2e/lighthouse.sh

## check: formatting, vet, then the tests
check:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(MAKE) vet
	$(MAKE) test

## bench: speed and memory benchmarks
bench:
	$(GO) test -tags $(TAGS) -run '^$$' -bench . -benchmem $(PKGS)

## load: a minute of mixed traffic (month pages, cached photos, 304s,
## uploads, share views, edits) against local mode on 127.0.0.1 at
## concurrency 50, then requests/s, p50/p99 per route, 5xx, peak RSS and
## goroutines; fails on a 5xx (LOAD_FLAGS=-h lists the knobs)
load:
	@$(GO) build -tags $(TAGS) -o bin/ndiro-dev ./cmd/ndiro
	@$(GO) build -tags $(TAGS) -o bin/ndiro-load ./cmd/ndiro-load
	./bin/ndiro-load -bin bin/ndiro-dev -photos testdata/photos $(LOAD_FLAGS)

## e2e: the release binary in AWS mode against dynalite, s3rver and
## oidc-provider from npm, each its own process, then in server mode (one
## machine, embedded storage) signed in through the same oidc-provider,
## restarted on its data dir (needs Node and npm)
e2e: release
	./e2e/run.sh

## faults: the fault suite: the release binary in AWS mode with toxiproxy
## (in-process) between it and dynalite and between it and s3rver, each
## fault (latency, stalled, reset, trickle) on each backend during each
## operation; every request within its bound, nothing half-written,
## recovery by itself, no orphan after the monitor's clean-up; prints the
## table (CI runs it after e2e; about 6 minutes)
faults: release
	NDIRO_E2E_TAGS=e2e,faults,nodynamic NDIRO_E2E_TIMEOUT=40m ./e2e/run.sh -run '^TestFaults$$' -v

## a11y: axe-core (npm) in Debian's Chromium on every owner page of the
## demo diary, at 390x844 and 1280x800, light and dark; fails on any
## violation (needs Node, npm and Chromium; CI runs it)
a11y:
	@$(GO) build -tags $(TAGS) -o bin/ndiro-dev ./cmd/ndiro
	./e2e/a11y.sh

## release: the static binary, into bin/ndiro (deploy/Dockerfile runs this
## target), stamped through -ldflags -X for `ndiro version`: VERSION
## (default: git describe --tags --always --dirty; without git, the VERSION
## file of a source archive; else "unknown"), COMMIT (git rev-parse HEAD)
## and BUILD_TIME (RFC 3339 UTC: SOURCE_DATE_EPOCH when set, else now),
## e.g. make release VERSION=v0.2.0
release_version = $(or $(VERSION),$(shell git describe --tags --always --dirty 2>/dev/null),$(shell sed -n '/^[^$$]/{p;q;}' VERSION 2>/dev/null),unknown)
release_commit = $(or $(COMMIT),$(shell git rev-parse HEAD 2>/dev/null))
release_time = $(or $(BUILD_TIME),$(shell date -u -d "@$$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ 2>/dev/null || date -u +%Y-%m-%dT%H:%M:%SZ))
release:
	CGO_ENABLED=0 go build -tags nodynamic -trimpath -ldflags='-s -w -X ndiro/internal/version.version=$(release_version) -X ndiro/internal/version.commit=$(release_commit) -X ndiro/internal/version.buildTime=$(release_time)' -o bin/ndiro ./cmd/ndiro

fmt:
	gofmt -w $$(git ls-files '*.go')

vet:
	$(GO) vet -tags $(TAGS) $(PKGS)
	$(GO) vet -tags $(TAGS),e2e ./e2e
	$(GO) vet -tags $(TAGS),e2e,faults ./e2e
