# The two commands a newcomer needs: `make run` and `make test`.
SHELL := /bin/bash
GO    ?= go
TOOLS := $(CURDIR)/.tools/bin

# Pinned dev tools, built from the Go module proxy once (a few minutes each).
TEMPORAL_CLI_MODULE  := github.com/temporalio/cli/cmd/temporal@v1.5.1
MINIO_MODULE         := github.com/minio/minio@v0.0.0-20260212201848-7aac2a2c5b7c
# staticcheck 2026.2.2 (module v0.8.2): its go.mod is Go 1.26's, like ours.
STATICCHECK_VERSION  := 0.8.2
STATICCHECK_MODULE   := honnef.co/go/tools/cmd/staticcheck@v$(STATICCHECK_VERSION)
# Temporal's workflowcheck is released apart from the SDK and does not
# import it; v0.6.0 is the newest, out before our SDK (v1.51.0).
WORKFLOWCHECK_VERSION := v0.6.0
WORKFLOWCHECK_MODULE  := go.temporal.io/sdk/contrib/tools/workflowcheck@$(WORKFLOWCHECK_VERSION)
# errcheck v1.30.0: its go.mod is Go 1.26's, like ours.
ERRCHECK_VERSION      := v1.30.0
ERRCHECK_MODULE       := github.com/kisielk/errcheck@$(ERRCHECK_VERSION)
# The cluster profile's Temporal server: the release the CLI embeds
# (`temporal --version`: Server 1.29.1, UI 2.42.1), built outside our module.
TEMPORAL_SERVER_VERSION := v1.29.1
UI_SERVER_MODULE        := github.com/temporalio/ui-server/v2/cmd/server@v2.42.1

.PHONY: run test test-short lint bench fuzz simulate build tools browser redis nginx rclone clean

run: tools redis build ## the whole system in the foreground (Ctrl-C stops it)
	./bin/devstack

test: lint tools browser redis ## lint, then unit, workflow and integration tests (real Temporal dev server, MinIO, Redis, Chromium)
	$(GO) test -count=1 -timeout 40m -p 2 ./...

test-short: ## skips the tests that need the Temporal dev server
	$(GO) test -short -count=1 ./...

# go vet, staticcheck, workflowcheck and errcheck; any finding fails the
# build. With the chaos tag, so the fault suites (integration/chaos) are
# checked too: no file is built only without it. workflowcheck: no workflow
# reaches non-deterministic code (its false positives, each with its
# reason, in workflowcheck.config.yaml). errcheck: production code checks
# every error (tests are left out; the calls that may go unchecked, each
# with its reason, in errcheck_excludes.txt). A tool in .tools/bin from
# another pin is refused, not used.
lint: $(TOOLS)/staticcheck $(TOOLS)/workflowcheck $(TOOLS)/errcheck ## go vet, staticcheck, workflowcheck, errcheck (pinned); fails on any finding
	@$(TOOLS)/staticcheck -version | grep -qF '($(STATICCHECK_VERSION))' || { \
		echo "$(TOOLS)/staticcheck is not $(STATICCHECK_VERSION): remove it and run make lint again"; exit 1; }
	@$(call check_pin,workflowcheck,$(WORKFLOWCHECK_VERSION))
	@$(call check_pin,errcheck,$(ERRCHECK_VERSION))
	$(GO) vet -tags chaos ./...
	$(TOOLS)/staticcheck -tags chaos ./...
	$(TOOLS)/workflowcheck -config workflowcheck.config.yaml ./workflows/...
	$(TOOLS)/errcheck -ignoretests -tags chaos -exclude errcheck_excludes.txt ./...
	@! git ls-files --error-unmatch .tools >/dev/null 2>&1 || { \
		echo ".tools is tracked: it is this machine's (a committed worktree symlink once made it point at itself); git rm --cached .tools"; exit 1; }

# check_pin refuses $(TOOLS)/$(1) unless it was built from version $(2) of
# its module (read from the binary's build info).
define check_pin
[ "$$($(GO) version -m $(TOOLS)/$(1) | awk '$$1 == "mod" { print $$3 }')" = "$(2)" ] || { \
		echo "$(TOOLS)/$(1) is not $(2): remove it and run make lint again"; exit 1; }
endef

bench: tools redis nginx rclone ## every benchmark, with a summary table
	$(GO) run ./cmd/benchtable

SIMULATE_OUT ?= docs/simulate
SEED ?= 1
simulate: ## the waiting room simulator: heatmaps and report into SIMULATE_OUT (docs/simulate), SEED (1)
	$(GO) run ./cmd/simulate --out $(SIMULATE_OUT) --seed $(SEED)

FUZZTIME ?= 30s
fuzz: ## every fuzz test of the project, FUZZTIME each (default 30s)
	@for dir in $$(grep -rl --include='*_test.go' '^func Fuzz' . | xargs -n1 dirname | sort -u); do \
		for fn in $$(grep -h '^func Fuzz' $$dir/*_test.go | sed 's/^func \(Fuzz[A-Za-z0-9_]*\).*/\1/'); do \
			echo ">> $$dir $$fn"; \
			$(GO) test -run '^$$' -fuzz "^$$fn$$" -fuzztime $(FUZZTIME) $$dir || exit 1; \
		done; \
	done

# The fault suites (integration/chaos, build tag chaos, so `make test` skips
# them): their own stack on free ports, the real binaries killed and
# restarted, S3 faults; figures printed and written to docs/chaos/report.md.
.PHONY: chaos
SOAK ?= 0
chaos: tools redis ## fault suites on the real stack, with a report (SOAK=1: a longer soak)
	@mkdir -p bin
	$(GO) test -c -tags chaos -o bin/chaos.test ./integration/chaos
	cd integration/chaos && CHAOS_SOAK=$(SOAK) nice ../../bin/chaos.test -test.v -test.count=1 -test.timeout $(if $(filter 1,$(SOAK)),150m,60m)

# Every worker pool (workers/<queue>) and every other binary (cmd/<name>),
# named after its folder: `make run` starts bin/<queue> for each task queue.
# The starters are bin/edgeflow-<job> (starters/<job>): a worker and a
# starter may share a folder name (publish, migrate), a prefixed starter
# never collides with one, and `edgeflow-<Tab>` lists them all.
STARTERS := $(notdir $(wildcard starters/*))
build: ## every worker pool and binary into ./bin, the starters as bin/edgeflow-<job>
	@mkdir -p bin
	$(GO) build -o bin/ ./workers/... ./cmd/...
	@for s in $(STARTERS); do echo "$(GO) build -o bin/edgeflow-$$s ./starters/$$s"; $(GO) build -o bin/edgeflow-$$s ./starters/$$s || exit 1; done

tools: $(TOOLS)/temporal $(TOOLS)/minio

# The edge's browser test drives Debian's Chromium; install it when missing.
browser:
	@command -v chromium >/dev/null 2>&1 || { \
		echo ">> installing Debian's chromium for the edge's browser test"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; \
	}

# The gates' shared counters run on Debian's redis-server, and on a primary
# and replica behind Debian's redis-sentinel in the Sentinel failover test and
# `make cluster` (`make run` and the tests start their own); install them when
# missing (redis-cli, for a Redis Cluster, comes with redis-server).
redis:
	@{ command -v redis-server && command -v redis-sentinel && command -v redis-cli; } >/dev/null 2>&1 || { \
		echo ">> installing Debian's redis-server and redis-sentinel for the gates' shared counters"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq redis-server redis-sentinel redis-tools >/dev/null; \
	}

# BenchmarkGateOutOfProcess and BenchmarkEdgeOutOfProcess compare with
# Debian's nginx (the edge's with its brotli_static module, Debian's
# libnginx-mod-http-brotli-static), run with a config of its own on free
# ports (never the system's); install them when missing. If they cannot be,
# the benchmarks leave out the nginx rows.
nginx:
	@{ command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ]; } && [ -e /usr/lib/nginx/modules/ngx_http_brotli_static_module.so ] || { \
		echo ">> installing Debian's nginx and its brotli_static module for the out-of-process benchmarks"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		{ $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq nginx libnginx-mod-http-brotli-static >/dev/null; } || \
			echo "!! could not install nginx: BenchmarkGateOutOfProcess and BenchmarkEdgeOutOfProcess leave out their nginx rows"; \
	}

# The Migrate benchmarks compare with Debian's rclone (`rclone copy -M`),
# its remotes given by environment variables; install it when missing. If
# it cannot be, they leave out the rclone rows.
rclone:
	@command -v rclone >/dev/null 2>&1 || { \
		echo ">> installing Debian's rclone for the Migrate benchmarks"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		{ $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq rclone >/dev/null; } || \
			echo "!! could not install rclone: the Migrate benchmarks leave out their rclone rows"; \
	}

# go_install builds a pinned module into .tools/bin, showing each package as it
# compiles on one updating line; on failure it prints the whole log.
define go_install
GOBIN=$(TOOLS) $(GO) install -v $(1) 2>&1 | tee $(2).log | awk '{ printf "\r\033[K   compiling %.70s", $$0; fflush() } END { print "" }'; \
		if [ ! -x $(2) ]; then cat $(2).log; echo "failed to build $(1)"; exit 1; fi; rm -f $(2).log
endef

# A usable binary already on PATH is linked instead of built.
$(TOOLS)/temporal:
	@mkdir -p $(TOOLS)
	@if p=$$(command -v temporal) && $$p --version >/dev/null 2>&1; then \
		echo "using $$p"; ln -sf $$p $@; \
	else \
		echo ">> building the Temporal CLI ($(TEMPORAL_CLI_MODULE)); once, a few minutes on 2 cores"; \
		$(call go_install,$(TEMPORAL_CLI_MODULE),$@); \
	fi

# Only the pinned staticcheck is linked: another release finds other things.
$(TOOLS)/staticcheck:
	@mkdir -p $(TOOLS)
	@if p=$$(command -v staticcheck) && $$p -version 2>/dev/null | grep -qF '($(STATICCHECK_VERSION))'; then \
		echo "using $$p"; ln -sf $$p $@; \
	else \
		echo ">> building staticcheck ($(STATICCHECK_MODULE)); once, a minute or two"; \
		$(call go_install,$(STATICCHECK_MODULE),$@); \
	fi

$(TOOLS)/workflowcheck:
	@mkdir -p $(TOOLS)
	@echo ">> building workflowcheck ($(WORKFLOWCHECK_MODULE)); once, under a minute"
	@$(call go_install,$(WORKFLOWCHECK_MODULE),$@)

$(TOOLS)/errcheck:
	@mkdir -p $(TOOLS)
	@echo ">> building errcheck ($(ERRCHECK_MODULE)); once, under a minute"
	@$(call go_install,$(ERRCHECK_MODULE),$@)

$(TOOLS)/minio:
	@mkdir -p $(TOOLS)
	@if p=$$(command -v minio) && $$p --version >/dev/null 2>&1; then \
		echo "using $$p"; ln -sf $$p $@; \
	else \
		echo ">> building MinIO ($(MINIO_MODULE)); once, a few minutes on 2 cores"; \
		$(call go_install,$(MINIO_MODULE),$@); \
	fi

# The cluster profile (`make cluster`, cmd/cluster): Temporal's services as
# separate processes on PostgreSQL, distributed MinIO, Redis per data center
# and the Anywhere one behind Sentinel, two processes of everything. Out of `make test` and CI: about 30 processes.
.PHONY: cluster cluster-test cluster-tools postgres
cluster: tools cluster-tools postgres redis build ## Temporal on PostgreSQL, distributed MinIO, Redis per data center, Anywhere behind Sentinel, every process ×2, in .data/cluster (foreground)
	./bin/cluster

cluster-test: tools cluster-tools postgres redis build ## the end-to-end paths and faults on the cluster profile (about 25 minutes)
	$(GO) test -tags cluster -count=1 -timeout 50m -v ./integration/cluster

cluster-tools: $(TOOLS)/temporal-server $(TOOLS)/temporal-sql-tool $(TOOLS)/ui-server

# Each builds into a directory of its own: all three commands are named
# `server` or `sql` by their packages.
define go_install_as
@mkdir -p $(TOOLS)/.build-$(2)
@echo ">> building $(2) ($(1)); once, several minutes on 2 cores"
@GOBIN=$(TOOLS)/.build-$(2) $(GO) install $(1) || { echo "failed to build $(1)"; exit 1; }
@mv $(TOOLS)/.build-$(2)/$(3) $(TOOLS)/$(2) && rmdir $(TOOLS)/.build-$(2)
endef

$(TOOLS)/temporal-server:
	$(call go_install_as,go.temporal.io/server/cmd/server@$(TEMPORAL_SERVER_VERSION),temporal-server,server)

$(TOOLS)/temporal-sql-tool:
	$(call go_install_as,go.temporal.io/server/cmd/tools/sql@$(TEMPORAL_SERVER_VERSION),temporal-sql-tool,sql)

$(TOOLS)/ui-server:
	$(call go_install_as,$(UI_SERVER_MODULE),ui-server,server)

# Debian's PostgreSQL for the cluster's persistence and visibility; its
# own system cluster is left alone (cmd/cluster runs one in .data/cluster/pg).
postgres:
	@ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || { \
		echo ">> installing Debian's postgresql for the cluster profile"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq postgresql >/dev/null; \
	}

clean: ## remove built binaries and local data (keeps the built tools)
	rm -rf bin .data
