# relaymesh — see README.md. `make run` starts the dev mesh, `make test` runs the suite.
GO        ?= go
BIN       ?= bin/relaymesh
PKGS      ?= ./...
FUZZTIME  ?= 30s
# Brief fuzzing inside `make test`; `make fuzz` runs each target for FUZZTIME.
TESTFUZZTIME ?= 3s
# How many fuzz targets fuzz-brief runs (and fuzz binaries it builds) at a time.
FUZZJOBS     ?= 2
PEER_VIEWERS  ?= 100,400,1000
PEER_DURATION ?= 20s
# The bare fan-out program, measured beside the servers when it is checked
# out next to the repository (bench-peer skips that column without it).
FLOOR_DIR     ?= ../shared/bench/fanlimit
# A directory for CPU and heap profiles of the relay in each window (none: no profiles).
PEER_PROFILE  ?=
# Extra linker flags of make build (the container build sets the revision).
LDFLAGS   ?=
IMAGE     ?= relaymesh:latest
REVISION  ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)

PEER_HLS_VIEWERS  ?= 1,20
PEER_HLS_DURATION ?= 60s

# The multi-host drills (loadtest/drills): viewer counts for `make drills`.
DRILL_RTMP_VIEWERS      ?= 300
DRILL_HLS_VIEWERS       ?= 20
DRILL_RECONNECT_VIEWERS ?= 20
# Where `make drills` writes its table (DRILL_REPORT= for none, e.g. small runs).
DRILL_REPORT            ?= docs/reliability.md
DRILL_TIMEOUT           ?= 14m
# The drills inside `make test`: the same six drills with fewer viewers (a
# share of the suite's time on a two-core CI machine), no report written.
TEST_DRILL_RTMP_VIEWERS      ?= 60
TEST_DRILL_HLS_VIEWERS       ?= 6
TEST_DRILL_RECONNECT_VIEWERS ?= 6

# The pure packages (no network code; internal/layering's test checks this
# list against its own): vetted for Windows too, as `make cross` does.
PURE_PKGS = ./internal/av ./internal/codec ./internal/amf ./internal/sharedobject ./internal/sharedobject/access \
	./internal/sharedobject/authority ./internal/sharedobject/replica ./topology/graph \
	./topology/distance ./topology/demand ./topology/placement ./topology/scaling \
	./topology/jumphash ./topology/controller

.PHONY: build run test test-unit fuzz-brief fuzz bench bench-peer bench-peer-hls drills vet cross clean image

build:
	$(GO) build $(if $(LDFLAGS),-ldflags "$(LDFLAGS)") -o $(BIN) ./cmd/relaymesh

# The container image (docs/deploy/Dockerfile runs make build with cgo off
# on a distroless base). Needs a Docker engine: docker build talks to it.
image:
	@command -v docker >/dev/null 2>&1 || { echo "make image needs Docker (the docker CLI and a running Docker engine); it builds docs/deploy/Dockerfile" >&2; exit 1; }
	@docker info >/dev/null 2>&1 || { echo "make image: no Docker engine answers (is dockerd running, may this user use it?)" >&2; exit 1; }
	DOCKER_BUILDKIT=1 docker build -f docs/deploy/Dockerfile --build-arg REVISION=$(REVISION) -t $(IMAGE) .

run: build
	./$(BIN) dev

vet:
	$(GO) vet $(PKGS)

# Other systems: everything builds for macOS; the pure packages vet for Windows.
cross:
	GOOS=darwin $(GO) build ./...
	GOOS=windows $(GO) vet $(PURE_PKGS)

# The whole suite: vet, race-enabled tests (including the end-to-end tests
# with ffmpeg, rtmpdump and Chromium), every fuzz target briefly, then the
# multi-host drills with fewer viewers (TEST_DRILL_*; about 3.5 minutes),
# writing no report. Without root or iproute2 the drills skip with a
# message; with CI=true they must run.
test: vet cross build
	$(GO) test -race -timeout 15m $(PKGS)
	@# The race detector's instrumentation makes every frame larger: the
	@# stack a parked viewer keeps is checked without it too.
	$(GO) test -count=1 -run '^TestParkedViewerStack$$' ./internal/serve/
	$(MAKE) --no-print-directory fuzz-brief FUZZTIME=$(TESTFUZZTIME)
	@echo "drills: $(TEST_DRILL_RTMP_VIEWERS) RTMP, $(TEST_DRILL_HLS_VIEWERS) HLS and $(TEST_DRILL_RECONNECT_VIEWERS) reconnecting viewers, no report (make drills runs them at full counts and writes docs/reliability.md; they need root and iproute2)"
	$(MAKE) --no-print-directory drills DRILL_REPORT= DRILL_TIMEOUT=8m \
	  DRILL_RTMP_VIEWERS=$(TEST_DRILL_RTMP_VIEWERS) DRILL_HLS_VIEWERS=$(TEST_DRILL_HLS_VIEWERS) \
	  DRILL_RECONNECT_VIEWERS=$(TEST_DRILL_RECONNECT_VIEWERS)

# The multi-host drills: every node in a network namespace of its own, faults
# injected, figures checked against thresholds and written to
# docs/reliability.md (DRILL_REPORT). Needs root and iproute2: skips with a
# message otherwise, fails when CI=true.
drills: build
	RELAYMESH_DRILLS=1 RELAYMESH_BIN=$(abspath $(BIN)) DRILL_REPORT=$(if $(DRILL_REPORT),$(abspath $(DRILL_REPORT))) \
	DRILL_RTMP_VIEWERS=$(DRILL_RTMP_VIEWERS) DRILL_HLS_VIEWERS=$(DRILL_HLS_VIEWERS) \
	DRILL_RECONNECT_VIEWERS=$(DRILL_RECONNECT_VIEWERS) \
	$(GO) test -count=1 -v -timeout $(DRILL_TIMEOUT) -run '^TestDrills$$' ./loadtest/drills

# Each package's fuzz test binary is built once (go test -c -fuzz); then
# every target runs from its package's directory, with the go command's
# fuzz cache, as go test -fuzz would run it. fuzz-brief (inside make test)
# builds and runs FUZZJOBS at a time, the cores shared out between the
# targets as fuzz workers; make fuzz runs the targets one by one with every
# core. A run that fails without writing a failing input ("context deadline
# exceeded" as its -fuzztime ends: a race in Go's fuzzing coordinator on a
# loaded machine, seen about once per CI run) is tried up to three times; a
# failing input fails at once.
fuzz-brief fuzz:
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; \
	jobs=$(if $(filter fuzz-brief,$@),$(FUZZJOBS),1); \
	workers=$$(( $$(nproc) / jobs )); [ $$workers -ge 1 ] || workers=1; \
	cache=$$($(GO) env GOCACHE)/fuzz; \
	$(GO) list -f '{{.ImportPath}} {{.Dir}}' ./... | while read -r pkg dir; do \
	  for t in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$dir/*_test.go 2>/dev/null | sed 's/^func //'); do \
	    echo "$$pkg $$dir $$tmp/$$(echo $$pkg | tr / _).test $$t"; \
	  done; \
	done >$$tmp/targets; \
	cut -d' ' -f1,3 $$tmp/targets | uniq | GO="$(GO)" xargs -P $(FUZZJOBS) -L 1 sh -c '$$GO test -c -fuzz . -o $$2 $$1 || exit 255' sh; \
	FUZZTIME=$(FUZZTIME) WORKERS=$$workers CACHE=$$cache TMP=$$tmp xargs -P $$jobs -L 1 sh -c ' \
	  pkg=$$1 dir=$$2 bin=$$3 t=$$4; log=$$TMP/$$(basename $$bin)-$$t.log; \
	  echo "fuzz $$pkg $$t ($$FUZZTIME)"; \
	  run() { (cd "$$dir" && "$$bin" -test.run "^\$$" -test.fuzz "^$$t\$$" -test.fuzztime $$FUZZTIME \
	    -test.parallel $$WORKERS -test.fuzzcachedir "$$CACHE/$$pkg") >"$$log" 2>&1; }; \
	  for try in 1 2 3; do \
	    if run; then exit 0; fi; \
	    cat "$$log"; \
	    if grep -q "Failing input written" "$$log"; then exit 255; fi; \
	    echo "fuzz run of $$t failed without a failing input (try $$try of 3: on a busy machine the Go fuzzing coordinator can fail a run as its -fuzztime ends)"; \
	  done; exit 255' sh <$$tmp/targets

bench:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

# relaymesh relay vs an nginx-rtmp pull edge of the same primary, side by side.
bench-peer: build
	@command -v nginx >/dev/null 2>&1 && [ -e /usr/lib/nginx/modules/ngx_rtmp_module.so ] || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx libnginx-mod-rtmp; }
	@command -v ffmpeg >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ffmpeg; }
	./$(BIN) loadtest peer --viewers $(PEER_VIEWERS) --duration $(PEER_DURATION) --floor $(FLOOR_DIR) $(if $(PEER_PROFILE),--profile $(abspath $(PEER_PROFILE)))

# HLS serving: a relaymesh relay vs an nginx-rtmp edge with hls on, plain
# HLS clients (playlists every 0.5 s, each whole segment once) on both at
# once, one window per audience size.
bench-peer-hls: build
	@command -v nginx >/dev/null 2>&1 && [ -e /usr/lib/nginx/modules/ngx_rtmp_module.so ] || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx libnginx-mod-rtmp; }
	@command -v ffmpeg >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ffmpeg; }
	./$(BIN) loadtest peer --proto hls --viewers $(PEER_HLS_VIEWERS) --duration $(PEER_HLS_DURATION)

clean:
	rm -rf bin
