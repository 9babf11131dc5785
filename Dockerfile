# Build a static binary, then ship it alone in a minimal, non-root image.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The version and commit are set at build time (docker build --build-arg
# VERSION=v1.2.3 --build-arg REVISION=$(git rev-parse HEAD) .); they show in
# toolguard -version, the start-up log line and toolguard_build_info.
ARG VERSION=dev
ARG REVISION=unknown
RUN CGO_ENABLED=0 go build -trimpath \
    -ldflags="-s -w -X github.com/prometheus/common/version.Version=${VERSION} -X github.com/prometheus/common/version.Revision=${REVISION}" \
    -o /out/toolguard ./cmd/proxy

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/toolguard /toolguard
USER nonroot:nonroot
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s CMD ["/toolguard", "-healthcheck"]
ENTRYPOINT ["/toolguard"]
