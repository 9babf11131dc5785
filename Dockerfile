# Build a static binary, then ship it alone in a minimal, non-root image.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/toolguard ./cmd/proxy

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/toolguard /toolguard
USER nonroot:nonroot
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s CMD ["/toolguard", "-healthcheck"]
ENTRYPOINT ["/toolguard"]
