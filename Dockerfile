# The image of frontier's workers on Kubernetes (`frontier k8s-job`): frontier built from this
# repository, added to the image of the engine the plan runs. BASE is that image; the comments
# at the top of k8s-job's output give the build command for a plan, for example
#
#   docker build --build-arg BASE=vllm/vllm-openai:v0.22.0 -t frontier:0.1.0-vllm-v0.22.0 .
#
# for vLLM (the release of the plan's engine.version line), ollama/ollama for Ollama, and a
# plain debian:bookworm-slim for the simulator, which needs nothing else. Push the image where
# the cluster pulls from and pass it to k8s-job with --image.
#
# frontier links SQLite (cgo) and loads NVML at run time, so it is built dynamically, on
# Ubuntu 22.04: its C library is as old as the one in vLLM's images, so the binary runs on
# each of them.
ARG BASE=vllm/vllm-openai:v0.22.0
ARG GO_IMAGE=golang:1.26

FROM ${GO_IMAGE} AS go

FROM ubuntu:22.04 AS build
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends gcc libc6-dev ca-certificates && rm -rf /var/lib/apt/lists/*
COPY --from=go /usr/local/go /usr/local/go
ENV PATH=/usr/local/go/bin:$PATH CGO_ENABLED=1
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN go build -buildvcs=false -trimpath -ldflags="-s -w" -o /out/frontier ./cmd/frontier

FROM ${BASE}
COPY --from=build /out/frontier /usr/local/bin/frontier
# The Job runs `frontier apply`; the container's first process is frontier itself, so that a
# pod replaced under the same host name recognises the trials its predecessor held.
ENTRYPOINT ["frontier"]
