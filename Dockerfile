# agentscope-proto FormatterService.
#   docker build -t agentscope-proto .
#   docker run -p 50051:50051 agentscope-proto
#   docker run -p 50051:50051 -p 8080:8080 agentscope-proto --http-port 8080   # + Connect (HTTP/JSON)
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1

WORKDIR /app
COPY pyproject.toml README.md LICENSE ./
# The wheel carries proto/ too (agentscope_proto/proto/...).
COPY proto ./proto
COPY python ./python
# The wheel's build hook and its compile of the compiled core of format(); the slim image has
# no C compiler, so this one says so in a line and runs format() on the Python path.
COPY hatch_build.py ./
COPY scripts/build_core.py ./scripts/
RUN pip install ".[http]" && useradd --system --uid 10001 --no-create-home formatter

USER formatter
EXPOSE 50051 8080

# gRPC health checking (grpc.health.v1), the same probe Kubernetes uses.
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
    CMD ["python", "-c", "import grpc, sys; from grpc_health.v1 import health_pb2 as h, health_pb2_grpc as g; ch = grpc.insecure_channel('127.0.0.1:50051'); r = g.HealthStub(ch).Check(h.HealthCheckRequest(), timeout=2); sys.exit(r.status != h.HealthCheckResponse.SERVING)"]

# Bind all interfaces inside the container; the platform decides exposure.
# The service is stateless: scale with replicas behind an L7 gRPC balancer.
ENTRYPOINT ["agentscope-proto", "serve", "--host", "0.0.0.0", "--port", "50051"]
CMD ["--workers", "2"]
