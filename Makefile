# ruvllm — build, run and test. `make run` and `make test` are the two
# commands the README promises work on a fresh Debian machine.

GO        ?= go
BIN       := bin
SHARED    ?= $(abspath ../shared)
MODEL     ?= $(SHARED)/models/ruvllm-test-llama-19m-q8_0.gguf
# engine/llm's golden tests take 1-4 minutes on 2 cores; the default 10-minute
# package timeout leaves too little room on a loaded machine.
GOTESTFLAGS ?= -timeout 30m

.PHONY: all build run test deps test-go test-templates test-noasm test-race test-darwin test-arm64 check-arm64-fma vet fuzz bench bench-compare clean \
	frontend-deps frontend app app-server test-frontend test-frontend-unit test-frontend-browser test-app-e2e screenshots

all: build

build:
	$(GO) build -o $(BIN)/ ./cmd/...

# run starts the daemon with the shared test model and opens a chat.
# With a display it builds and opens the desktop app (which starts the daemon
# with MODEL); without one, or with CLI=1, or when the app cannot be built
# here, the terminal chat.
run: build
	@test -f "$(MODEL)" || { echo "model $(MODEL) not found: set MODEL=path/to/model.gguf"; exit 1; }
	@if [ -z "$(CLI)" ] && { [ -n "$$DISPLAY$$WAYLAND_DISPLAY" ] || [ "$$(uname -s)" = Darwin ]; }; then \
		if $(MAKE) --no-print-directory app; then \
			exec $(BIN)/ruvllm-app --model "$(MODEL)" --daemon $(abspath $(BIN))/ruvllmd; \
		fi; \
		echo "make run: the desktop app did not build (apt: libwebkit2gtk-4.1-dev libgtk-3-dev pkg-config gcc; node >= 20.19): terminal chat instead"; \
	fi; \
	exec $(BIN)/ruvllm chat -m "$(MODEL)"

# test runs every step; tools/deps/deps.sh installs what a fresh Debian
# machine lacks first (as root with apt-get; NO_INSTALL=1 turns that off),
# and a step whose tools are still missing is skipped with a message naming
# the package (with CI=true that is a failure).
DEPS := tools/deps/deps.sh
test: deps vet test-go test-templates test-noasm test-race test-darwin test-arm64
	@$(DEPS) run frontend $(MAKE) --no-print-directory test-frontend-unit
	@CHROMIUM=$(CHROMIUM) $(DEPS) run frontend-browser $(MAKE) --no-print-directory test-frontend-browser
	@$(DEPS) run app-e2e $(MAKE) --no-print-directory test-app-e2e

deps:
	@$(DEPS) install

vet:
	$(GO) vet ./...

# test-templates prints the chat-template conformance counts against
# ../shared/templates (the test also runs, silently, in test-go).
test-templates:
	$(GO) test -count=1 -run '^TestConformance$$' -v ./engine/jinja

test-go:
	$(GO) test $(GOTESTFLAGS) ./...

# The pure-Go references, which the SIMD kernels are tested against, must
# pass on their own too: the noasm tag leaves the assembly out.
test-noasm:
	$(GO) test $(GOTESTFLAGS) -tags noasm ./engine/quant/ ./engine/compute/... ./engine/gemm/

# The engine's concurrent parts (the CPU backend's workers, the scheduler,
# the prefix cache, KV pools, speculation) under the race detector: a data
# race there may show only on arm64's weaker memory order.
test-race:
	$(GO) test -race ./engine/compute/cpu/ ./engine/sched/ ./engine/prefix/ ./engine/kv/ ./engine/spec/

# Every package that builds without cgo must build for darwin/arm64; cgo
# packages are type-checked with FakeImportC by tools/darwincheck.
test-darwin:
	GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 $(GO) build ./...
	@if [ -d tools/darwincheck ]; then $(GO) run ./tools/darwincheck ./...; fi

# The engine's arm64 code paths run under qemu-user when it is installed.
test-arm64: check-arm64-fma
	@$(DEPS) run arm64 sh -c 'GOARCH=arm64 $(GO) test -exec qemu-aarch64 ./engine/quant/... ./engine/compute/... ./engine/gemm/... && \
		QEMU_CPU=cortex-a53 GOARCH=arm64 $(GO) test -exec qemu-aarch64 -run TestARM64Kernels ./engine/quant/' 

# Go may fuse x*y+z into one float32 FMA on arm64, which amd64 never
# does; engine/quant rounds such products with float32() so the reference
# dot products, dequantizers and quantizers give the same bits on both
# (fma32, a float64 FMA, is the only fusion they mean).
check-arm64-fma:
	@GOARCH=arm64 $(GO) build -gcflags=-S ./engine/quant/ 2>&1 | \
		awk '/ STEXT/ {fn = $$1} /\tFN?M(ADD|SUB)S\t/ {print "engine/quant: float32 FMA on arm64 in " fn; bad = 1} END {exit bad}'

FUZZTIME ?= 10s
fuzz:
	@for pkg in $$($(GO) list ./...); do \
		for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
			echo "fuzz $$pkg $$f"; \
			$(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
		done; \
	done

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./engine/...

# bench-compare measures ruvllm against llama.cpp (node-llama-cpp) on the
# shared and synthetic models; needs node >= 20 and npm once. Example:
# make bench-compare COMPAREFLAGS="-t 4 --write" (default: --quick).
COMPAREFLAGS ?= --quick
bench-compare:
	bench/compare/run.sh $(COMPAREFLAGS)

# --- desktop app (Wails v2): frontend/ (Svelte + Vite), main.go, app/ ---
# Needs node >= 20.19 with npm, and for `app` the webkit2gtk 4.1 and GTK 3
# headers (apt: libwebkit2gtk-4.1-dev libgtk-3-dev pkg-config gcc).
APP_TAGS ?= desktop,production$(if $(filter Linux,$(shell uname -s)),$(comma)webkit2_41)
comma := ,
CHROMIUM ?= /usr/bin/chromium

frontend/node_modules/.package-lock.json: frontend/package.json frontend/package-lock.json
	cd frontend && npm ci --no-audit --no-fund --loglevel=error

frontend-deps: frontend/node_modules/.package-lock.json

frontend: frontend-deps
	cd frontend && npx vite build --logLevel warn

app: frontend
	CGO_ENABLED=1 $(GO) build -tags $(APP_TAGS) -o $(BIN)/ruvllm-app .

app-server:
	$(GO) build -o $(BIN)/appserver ./test/appserver

# Unit and component tests (jsdom), type checks, then the built frontend
# in chromium against a real daemon through bin/appserver.
test-frontend: test-frontend-unit test-frontend-browser

test-frontend-unit: frontend-deps
	cd frontend && npx svelte-check --tsconfig ./tsconfig.json --threshold error
	cd frontend && npx vitest run

test-frontend-browser: frontend app-server
	cd frontend && CHROMIUM=$(CHROMIUM) npx vitest run --config vitest.browser.config.ts

# The real Wails binary under Xvfb, driven with xdotool (apt: xvfb xdotool
# imagemagick dbus libwebkit2gtk-4.1-0).
# The synthetic model samples, and about once in a dozen runs one of the two
# replies came back empty, which the script counts as a failure: one retry
# keeps that from failing CI, while a real fault fails both runs.
test-app-e2e: app app-server
	bash test/app-e2e.sh || { echo "test-app-e2e: failed once, retrying"; bash test/app-e2e.sh; }

# Refresh docs/screenshots from the e2e run.
screenshots: app app-server
	bash test/app-e2e.sh docs/screenshots

clean:
	rm -rf $(BIN) frontend/dist
