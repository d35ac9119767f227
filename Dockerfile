# flightgw container image: docker compose up (see docker-compose.yml).
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# flightgw, the light front, runs `serve` as flightgw-server found beside it
# (execve: the gateway stays PID 1 and gets docker stop's SIGTERM).
RUN CGO_ENABLED=0 go build -o /out/flightgw ./cmd/flightgw
RUN CGO_ENABLED=1 go build -tags duckdb_arrow -o /out/flightgw-server ./cmd/flightgw-server

FROM debian:bookworm-slim
RUN useradd --system --home /var/lib/flightgw flightgw && mkdir -p /var/lib/flightgw && chown flightgw /var/lib/flightgw
COPY --from=build /out/flightgw /out/flightgw-server /usr/local/bin/
USER flightgw
EXPOSE 32010
ENTRYPOINT ["flightgw", "serve", "--data-dir", "/var/lib/flightgw"]
