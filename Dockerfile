# syntax=docker/dockerfile:1
#
# The runtime's image: cmd/worker is the entrypoint; cmd/api (the Tasks API,
# and the codec server) and cmd/starter (the CLI) ride along in
# /usr/local/bin. The dev stack (cmd/agentdev) is not built: in
# docker-compose.yml Temporal runs in its own containers. The image has no
# shell: `worker healthcheck URL` is its health probe.
#
#   docker build -t agenttask .
#   docker run --rm -e TEMPORAL_ADDRESS=host.docker.internal:7233 agenttask
#   docker run --rm --entrypoint /usr/local/bin/api -e API_KEYS=... agenttask
#
# Configuration is environment only (docs/configuration.md).

# go.mod asks for go 1.26.8, and the official image sets GOTOOLCHAIN=local,
# so the builder must be at least that patch release.
ARG GO_VERSION=1.26.8

FROM golang:${GO_VERSION} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod \
    go mod download
COPY . .
# No binary here links the Temporal server or SQLite, so all build without
# cgo and run on a static base image.
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/worker ./cmd/worker && \
    CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/starter ./cmd/starter && \
    CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/api ./cmd/api && \
    mkdir -p /out/data/transcripts

# distroless/static: CA certificates (for HTTPS model endpoints), tzdata, no
# shell, user nonroot (65532).
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/worker /out/starter /out/api /usr/local/bin/
# /data belongs to nonroot, so a named volume mounted there starts out
# writable by the worker (Docker copies the ownership into a new volume).
COPY --from=build --chown=65532:65532 /out/data /data
ENV PATH=/usr/local/bin:/usr/bin:/bin \
    AGENT_DATA_DIR=/data
USER nonroot:nonroot
ENTRYPOINT ["/usr/local/bin/worker"]
