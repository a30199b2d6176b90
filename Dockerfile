# onceflow's container image: a static binary on a distroless base.
#   docker build -t onceflow .
#   docker run --rm onceflow run copy --brokers kafka:9092 ...
# docker-compose.yml builds it for its three replicas.

FROM golang:1.26 AS build
WORKDIR /src
# The module cache first, so that a change of source keeps this layer.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /out/onceflow ./cmd/onceflow
# The state directory, owned by the user the image runs as: a named volume
# mounted there starts with this ownership.
RUN mkdir -p /out/state

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/onceflow /usr/local/bin/onceflow
COPY --from=build --chown=65532:65532 /out/state /var/lib/onceflow
USER nonroot:nonroot
# --metrics-addr 0.0.0.0:9100 serves the status page, /metrics, /healthz and
# /readyz here; `onceflow probe http://127.0.0.1:9100/healthz` is the health
# check (the image has no shell).
EXPOSE 9100
ENTRYPOINT ["/usr/local/bin/onceflow"]
