#!/usr/bin/python3
"""Example lcl training strategy in Python: label smoothing whose alpha
decays linearly from --param alpha=A (default 0.2) at the first epoch to 0
at the last, so the last epoch trains on one-hot targets (the Go example
examples/lcl-strategy-annealls, written again here: the two plan alike).

Needs only python3-grpcio and python3-protobuf (Debian packages), no Go
toolchain. The gRPC handlers are registered by hand with
grpc.method_handlers_generic_handler, so no grpcio-tools stubs are needed:
lcl_pb2.py (made by scripts/proto.sh with protoc --python_out) next to this
file is enough.

Install: copy this file and lcl_pb2.py into $LCL_PLUGIN_PATH or
~/.lcl/plugins (the name must start with lcl-strategy-), then
    lcl plugins list
    lcl train --synsets fashion-mnist --strategy pyannealls --param alpha=0.3 ...
"""
import array
import hashlib
import os
import sys
import tempfile
import threading
from concurrent import futures

import grpc

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
import lcl_pb2  # noqa: E402

# The handshake go-plugin expects (see plugins/internal/shim/handshake.go).
COOKIE_KEY = "LCL_PLUGIN_MAGIC_COOKIE"
COOKIE_VALUE = "9f1c0b7e-lcl-label-similarity-curriculum"
CORE_PROTOCOL = 1  # go-plugin's own protocol
APP_PROTOCOL = 2   # lcl's ProtocolVersion
MAX_MESSAGE = 256 << 20

PARAMS = [lcl_pb2.Param(name="alpha", type="float", default="0.2", help="smoothing at the first epoch")]


class AnnealLS:
    """The strategy's state: Begin sets it, Plan reads it."""

    def __init__(self):
        self.classes = 0
        self.epochs = 0
        self.alpha = 0.2
        self.matrix_dir = ""   # where large plans go (BeginRequest.matrix_dir)
        self.inline_limit = 0

    def describe(self, _request, _context):
        return lcl_pb2.StrategyInfo(
            name="pyannealls", version="0.1.0",
            summary="label smoothing annealed linearly to one-hot (Python example)",
            params=PARAMS, models=1, stages=["train"], needs_similarity=False)

    def begin(self, request, context):
        for name in sorted(request.params):
            if name != "alpha":
                context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                              "unknown parameter %r (known: alpha)" % name)
        try:
            alpha = float(request.params.get("alpha", "0.2"))
        except ValueError:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                          "parameter alpha: %r is not a number" % request.params["alpha"])
        if not 0 <= alpha <= 1:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "alpha = %g, want a value in [0,1]" % alpha)
        self.alpha, self.classes, self.epochs = alpha, len(request.classes), request.epochs
        self.matrix_dir, self.inline_limit = request.matrix_dir, request.inline_limit
        return lcl_pb2.BeginResponse(stages=[lcl_pb2.Stage(
            name="train", epochs=request.epochs, models=1, teacher=-1, fresh=True)])

    def plan(self, request, _context):
        a = self.alpha
        if self.epochs > 1:
            a *= 1 - request.epoch / (self.epochs - 1)
        c = self.classes

        def row(i):
            r = [a / c] * c
            r[i] = 1 - a + a / c
            return r

        return lcl_pb2.Plan(targets=self.matrix(c, row), coefficients=lcl_pb2.Coefficients(soft_ce=1))

    def matrix(self, c, row):
        """The c×c matrix whose row i is row(i), as lcl wants it back: inside
        the message while it is small, else written row by row as
        little-endian float32 into a file of the matrix folder Begin named,
        with its SHA-256 (lcl reads, checks and removes it). 21,843 classes
        are then never one list of 477 M numbers."""
        limit = self.inline_limit or 64 << 20
        if not self.matrix_dir or 4 * c * c <= limit:
            return lcl_pb2.Matrix(rows=c, cols=c, data=[x for i in range(c) for x in row(i)])
        digest = hashlib.sha256()
        fd, path = tempfile.mkstemp(prefix="matrix-", suffix=".f32", dir=self.matrix_dir)
        with os.fdopen(fd, "wb") as f:
            for i in range(c):
                values = array.array("f", row(i))
                if sys.byteorder == "big":
                    values.byteswap()
                raw = values.tobytes()
                digest.update(raw)
                f.write(raw)
        return lcl_pb2.Matrix(rows=c, cols=c, shared=lcl_pb2.SharedMatrix(
            path=path, digest="sha256:" + digest.hexdigest()))

    def observe(self, _request, _context):
        return lcl_pb2.Empty()  # this strategy does not adapt to the metrics

    def features(self, request_iterator, _context):
        for _chunk in request_iterator:  # never asked: no stage wants features
            pass
        return lcl_pb2.Empty()


def main():
    if os.environ.get(COOKIE_KEY) != COOKIE_VALUE:
        sys.stderr.write("%s is an lcl plugin: put it in $LCL_PLUGIN_PATH or ~/.lcl/plugins "
                         "and run `lcl plugins list`\n" % sys.argv[0])
        sys.exit(1)
    versions = os.environ.get("PLUGIN_PROTOCOL_VERSIONS", str(APP_PROTOCOL)).split(",")
    if str(APP_PROTOCOL) not in versions:
        sys.stderr.write("lcl speaks plugin protocol %s, this plugin %d\n" % (",".join(versions), APP_PROTOCOL))
        sys.exit(1)

    done = threading.Event()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4), options=[
        ("grpc.max_send_message_length", MAX_MESSAGE),
        ("grpc.max_receive_message_length", MAX_MESSAGE)])

    def unary(fn, req, resp):
        return grpc.unary_unary_rpc_method_handler(
            fn, request_deserializer=req.FromString, response_serializer=resp.SerializeToString)

    def raw(fn):
        return grpc.unary_unary_rpc_method_handler(
            fn, request_deserializer=lambda b: b, response_serializer=lambda b: b)

    def shutdown(_request, _context):
        done.set()
        return b""

    s = AnnealLS()
    server.add_generic_rpc_handlers((
        grpc.method_handlers_generic_handler("lcl.plugin.v1.Strategy", {
            "Describe": unary(s.describe, lcl_pb2.Empty, lcl_pb2.StrategyInfo),
            "Begin": unary(s.begin, lcl_pb2.BeginRequest, lcl_pb2.BeginResponse),
            "Plan": unary(s.plan, lcl_pb2.PlanRequest, lcl_pb2.Plan),
            "Observe": unary(s.observe, lcl_pb2.Metrics, lcl_pb2.Empty),
            "Features": grpc.stream_unary_rpc_method_handler(
                s.features, request_deserializer=lcl_pb2.FeatureChunk.FromString,
                response_serializer=lcl_pb2.Empty.SerializeToString),
        }),
        # go-plugin asks the health service whether "plugin" is serving:
        # HealthCheckResponse{status: SERVING} is the two bytes 08 01.
        grpc.method_handlers_generic_handler("grpc.health.v1.Health", {
            "Check": raw(lambda _r, _c: b"\x08\x01"),
        }),
        # The host asks the plugin to exit when it is done with it.
        grpc.method_handlers_generic_handler("plugin.GRPCController", {
            "Shutdown": raw(shutdown),
        }),
    ))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print("%d|%d|tcp|127.0.0.1:%d|grpc" % (CORE_PROTOCOL, APP_PROTOCOL, port), flush=True)
    done.wait()
    server.stop(grace=0.5)


if __name__ == "__main__":
    main()
