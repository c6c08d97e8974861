# syntax=docker/dockerfile:1
#
# The worker image: cmd/worker is the entrypoint, and cmd/starter (the CLI)
# rides along at /usr/local/bin/starter. The dev stack (cmd/agentdev) is not
# built: in docker-compose.yml Temporal runs in its own container.
#
#   docker build -t agenttask-worker .
#   docker run --rm -e TEMPORAL_ADDRESS=host.docker.internal:7233 agenttask-worker
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
# Neither binary links the Temporal server or SQLite, so both build without cgo
# and run on a static base image.
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/worker ./cmd/worker && \
    CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/starter ./cmd/starter && \
    mkdir -p /out/data/transcripts

# distroless/static: CA certificates (for HTTPS model endpoints), tzdata, no
# shell, user nonroot (65532).
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/worker /out/starter /usr/local/bin/
# /data belongs to nonroot, so a named volume mounted there starts out
# writable by the worker (Docker copies the ownership into a new volume).
COPY --from=build --chown=65532:65532 /out/data /data
ENV PATH=/usr/local/bin:/usr/bin:/bin \
    AGENT_DATA_DIR=/data
USER nonroot:nonroot
ENTRYPOINT ["/usr/local/bin/worker"]
