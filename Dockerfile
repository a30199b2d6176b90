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

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/onceflow /usr/local/bin/onceflow
USER nonroot:nonroot
# --metrics-addr 0.0.0.0:9100 serves /metrics, /healthz and /readyz here.
EXPOSE 9100
ENTRYPOINT ["/usr/local/bin/onceflow"]
