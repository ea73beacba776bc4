# syntax=docker/dockerfile:1
#
# One builder, one small image per deployable. docker-compose.yml picks the
# image with build.target; by hand:
#
#   docker build --target compress -t edgeflow-compress .
#
# Targets: publish, compress, migrate, admit (worker pools), edge and gate (HTTP), starters (CLIs).

# ---- build -----------------------------------------------------------------
FROM golang:1.26-bookworm AS build
WORKDIR /src
# Static binaries: the runtime images carry no C library the binaries could
# depend on, and -trimpath keeps build paths out of panics and logs.
ENV CGO_ENABLED=0 GOFLAGS=-trimpath

# Modules first, in a layer of their own: it is rebuilt only when go.mod or
# go.sum change, not on every source edit.
COPY go.mod go.sum ./
RUN go mod download

COPY . .
# With several packages and -o ending in a slash, each binary is named after
# its directory; workers/publish and starters/publish share a name, so each
# layer builds into its own folder. The build cache (a cache mount, so
# rebuilds after an edit stay incremental) compiles shared packages once.
RUN --mount=type=cache,target=/root/.cache/go-build \
    go build -ldflags="-s -w" -o /out/workers/ ./workers/publish ./workers/compress ./workers/migrate ./workers/admit \
 && go build -ldflags="-s -w" -o /out/cmd/ ./cmd/edge ./cmd/gate ./cmd/console \
 && go build -ldflags="-s -w" -o /out/starters/ ./starters/publish ./starters/schedule ./starters/catalog ./starters/room ./starters/migrate

# ---- runtime base ----------------------------------------------------------
# Debian slim instead of distroless: healthchecks need an HTTP client inside
# the container (the mains have no self-check mode) and the schedule one-shot
# needs a shell. ca-certificates is required for the npm registry and the
# GitHub API over https.
FROM debian:bookworm-slim AS runtime
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates curl \
 && rm -rf /var/lib/apt/lists/*
# An unprivileged user with a fixed id, so volume permissions do not depend on
# which image was built first.
RUN useradd --system --uid 65532 --user-group --no-create-home --shell /usr/sbin/nologin edgeflow
USER 65532:65532
# The catalog starter's default directory is the relative "catalog": running
# from / makes that /catalog in the images that carry one.
WORKDIR /

# ---- publish ---------------------------------------------------------------
# The publish pool reads the package catalog (ListCatalog, CheckPackages), so
# the catalog ships in its image; a catalog change means a new image.
FROM runtime AS publish
COPY catalog /catalog
COPY --from=build /out/workers/publish /usr/local/bin/publish
# Inside a container the loopback defaults of the flags are unreachable from
# probes; these keep `docker run` usable without extra -e flags.
ENV CATALOG_DIR=/catalog HEALTH_ADDR=0.0.0.0:8091
EXPOSE 8091
ENTRYPOINT ["/usr/local/bin/publish"]

# ---- compress --------------------------------------------------------------
# CPU-bound and scaled on its own; it never reads the catalog.
FROM runtime AS compress
COPY --from=build /out/workers/compress /usr/local/bin/compress
ENV HEALTH_ADDR=0.0.0.0:8092
EXPOSE 8092
ENTRYPOINT ["/usr/local/bin/compress"]

# ---- migrate ---------------------------------------------------------------
# Listings and transfers between S3 stores: network-bound, many at once.
FROM runtime AS migrate
COPY --from=build /out/workers/migrate /usr/local/bin/migrate
ENV HEALTH_ADDR=0.0.0.0:8093
EXPOSE 8093
ENTRYPOINT ["/usr/local/bin/migrate"]

# ---- admit -----------------------------------------------------------------
# The room workflows: state, timers and queries only, no activities.
FROM runtime AS admit
COPY --from=build /out/workers/admit /usr/local/bin/admit
ENV HEALTH_ADDR=0.0.0.0:8094
EXPOSE 8094
ENTRYPOINT ["/usr/local/bin/admit"]

# ---- edge ------------------------------------------------------------------
# It carries the publish workers' catalog: a version of a catalog library
# not yet published is published on its first request (EDGE_CATALOG_DIR).
FROM runtime AS edge
COPY catalog /catalog
COPY --from=build /out/cmd/edge /usr/local/bin/edge
ENV EDGE_ADDR=0.0.0.0:8080
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/edge"]

# ---- gate ------------------------------------------------------------------
# The waiting room's reverse proxy. /keys holds the cookie key file every
# gate shares (a volume; `gate keygen --file` creates it once).
FROM runtime AS gate
USER root
RUN install -d -o 65532 -g 65532 -m 0700 /keys
USER 65532:65532
COPY --from=build /out/cmd/gate /usr/local/bin/gate
ENV GATE_ADDR=0.0.0.0:8088 GATE_HEALTH_ADDR=0.0.0.0:8098
EXPOSE 8088 8098
ENTRYPOINT ["/usr/local/bin/gate"]

# ---- console ---------------------------------------------------------------
# The console: the HTTP API under /api/v1 and the web pages at /. Its tokens
# come from a file (CONSOLE_TOKENS_FILE, a Compose secret) or CONSOLE_TOKENS.
# It lists the publish workers' catalog, so it carries the same copy.
FROM runtime AS console
COPY catalog /catalog
COPY --from=build /out/cmd/console /usr/local/bin/console
ENV CONSOLE_ADDR=0.0.0.0:8070 CATALOG_DIR=/catalog
EXPOSE 8070
ENTRYPOINT ["/usr/local/bin/console"]

# ---- starters --------------------------------------------------------------
# The CLIs in one image, so there is no single ENTRYPOINT: the command names
# the one to run, e.g. `docker run --rm edgeflow-starters publish --package mitt`.
# The catalog lets `publish --catalog /catalog` and `catalog validate` work.
FROM runtime AS starters
COPY catalog /catalog
COPY --from=build /out/starters/publish /out/starters/schedule /out/starters/catalog /out/starters/room /out/starters/migrate /usr/local/bin/
CMD ["bash"]
