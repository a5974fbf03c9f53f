#!/usr/bin/python3
"""Example lcl similarity source in Python: s(a,b) = Jaccard similarity of
the character bigrams of the class names (s(a,a) = 1).

Needs only python3-grpcio and python3-protobuf (Debian packages). The gRPC
handlers are registered by hand with grpc.method_handlers_generic_handler, so
no grpcio-tools stubs are needed: lcl_pb2.py (made by scripts/proto.sh with
protoc --python_out) next to this file is enough.

Install: copy this file and lcl_pb2.py into $LCL_PLUGIN_PATH or
~/.lcl/plugins (the name must start with lcl-similarity-).
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


def bigrams(name):
    s = "^" + name.lower() + "$"
    return {s[i:i + 2] for i in range(len(s) - 1)}


def describe(_request, _context):
    return lcl_pb2.SourceInfo(
        name="bigram", version="0.1.0",
        summary="Jaccard similarity of the class names' character bigrams")


def compute(request, context):
    if request.params:
        context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                      "unknown parameter %r (this source takes none)" % sorted(request.params)[0])
    grams = [bigrams(c.name) for c in request.classes]
    n = len(grams)
    data = []
    for a in grams:
        for b in grams:
            union = a | b
            data.append(len(a & b) / len(union) if union else 1.0)
    return matrix(n, data, request)


def matrix(n, data, request):
    """The n×n matrix as lcl wants it back: inside the message while it is
    small, else as a file of little-endian float32 in the request's
    matrix_dir, named with its SHA-256 (lcl reads, checks and removes it)."""
    limit = request.inline_limit or 64 << 20
    if not request.matrix_dir or 4 * n * n <= limit:
        return lcl_pb2.Matrix(rows=n, cols=n, data=data)
    values = array.array("f", data)
    if sys.byteorder == "big":
        values.byteswap()
    raw = values.tobytes()
    fd, path = tempfile.mkstemp(prefix="matrix-", suffix=".f32", dir=request.matrix_dir)
    with os.fdopen(fd, "wb") as f:
        f.write(raw)
    digest = "sha256:" + hashlib.sha256(raw).hexdigest()
    return lcl_pb2.Matrix(rows=n, cols=n, shared=lcl_pb2.SharedMatrix(path=path, digest=digest))


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

    server.add_generic_rpc_handlers((
        grpc.method_handlers_generic_handler("lcl.plugin.v1.SimilaritySource", {
            "Describe": unary(describe, lcl_pb2.Empty, lcl_pb2.SourceInfo),
            "Compute": unary(compute, lcl_pb2.SimilarityRequest, lcl_pb2.Matrix),
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
