"""A loopback stand-in for Grafana Pyroscope's POST /ingest (no Pyroscope server is
packaged for Debian): it checks what Pyroscope checks — method and path, the `name`
label set's grammar (pkg/og/storage/segment, api/model/labelset), `from` <= `until`
within the window the backend accepts, format and spyName, a gzip body holding a pprof
within the limits (validation/limits.go: 4 MiB uncompressed, 16,000 samples) — and
answers 400 with the reason, as Pyroscope does, for a request that fails a check. A
test can make it answer otherwise (503, 400, never) with `respond`."""
import gzip
import http.server
import re
import threading
import time
import urllib.parse

MAX_BYTES = 4 << 20
MAX_SAMPLES = 16000
MAX_AGE = 3600
MAX_FUTURE = 600
LABEL_NAME = re.compile(r"^[A-Za-z0-9_.]+$")
SERVICE_NAME = re.compile(r"^[A-Za-z0-9_./-]+$")
# spyNames that make Pyroscope rewrite function names
REWRITING_SPIES = {"pyspy", "rbspy", "scripting"}


def _varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return v, i


def _fields(b):
    """(field number, value) of a protobuf message: ints for varints, bytes otherwise."""
    i = 0
    while i < len(b):
        key, i = _varint(b, i)
        num, wire = key >> 3, key & 7
        if wire == 0:
            v, i = _varint(b, i)
        elif wire == 2:
            n, i = _varint(b, i)
            v, i = b[i:i + n], i + n
        elif wire == 1:
            v, i = b[i:i + 8], i + 8
        elif wire == 5:
            v, i = b[i:i + 4], i + 4
        else:
            raise ValueError("wire type %d" % wire)
        yield num, v


def _packed(v):
    if isinstance(v, int):
        return [v]
    out, i = [], 0
    while i < len(v):
        x, i = _varint(v, i)
        out.append(x)
    return out


class Pprof:
    """What the checks and the tests need of a profile.proto message."""

    def __init__(self, raw):
        self.strings, self.samples, self.sample_types = [], [], []
        self.time_nanos = self.duration_nanos = 0
        self.label_keys = set()
        self.functions = {}  # id -> name index
        self.locations = {}  # id -> function id of the first line
        for num, v in _fields(raw):
            if num == 6:
                self.strings.append(v.decode("utf-8", errors="replace"))
            elif num == 1:
                self.sample_types.append(dict(_fields(v)))
            elif num == 2:
                s = {"locs": [], "values": [], "labels": []}
                for n2, v2 in _fields(v):
                    if n2 == 1:
                        s["locs"] += _packed(v2)
                    elif n2 == 2:
                        s["values"] += _packed(v2)
                    elif n2 == 3:
                        s["labels"].append(dict(_fields(v2)))
                self.samples.append(s)
            elif num == 5:
                f = dict(_fields(v))
                self.functions[f.get(1, 0)] = f.get(2, 0)
            elif num == 4:
                lid = fn = 0
                for n2, v2 in _fields(v):
                    if n2 == 1:
                        lid = v2
                    elif n2 == 4 and not fn:
                        fn = dict(_fields(v2)).get(1, 0)
                self.locations[lid] = fn
            elif num == 9:
                self.time_nanos = v
            elif num == 10:
                self.duration_nanos = v
        for s in self.samples:
            for l in s["labels"]:
                self.label_keys.add(self.strings[l.get(1, 0)])
        self.types = [self.strings[t.get(1, 0)] for t in self.sample_types]

    def count(self):
        """Samples (the first value, samples/count) in the profile."""
        return sum(s["values"][0] for s in self.samples)

    def stacks(self):
        """[(count, frame names root first)]."""
        out = []
        for s in self.samples:
            names = [self.strings[self.functions[self.locations[l]]] for l in s["locs"]]
            out.append((s["values"][0], names[::-1]))
        return out

    def pids(self):
        """pids of the process frames, "python3.12 (pid 1234)"."""
        out = set()
        for _, names in self.stacks():
            for n in names:
                m = re.match(r"^.* \(pid (\d+)[,)]", n)
                if m:
                    out.add(int(m.group(1)))
                    break
        return out


def parse_name(name):
    """(service, {label: value}) of Pyroscope's name parameter, or raises ValueError as
    Pyroscope's parser refuses it."""
    if "{" not in name:
        app, rest = name, "}"
    else:
        app, rest = name.split("{", 1)
    app = app.strip()
    if not app or not SERVICE_NAME.match(app):
        raise ValueError("invalid service name %r" % app)
    if not rest.endswith("}") or rest.count("}") != 1:
        raise ValueError("label set not closed by one '}': %r" % name)
    labels = {}
    body = rest[:-1]
    for part in body.split(",") if body else []:
        if "=" not in part:
            raise ValueError("label without '=': %r" % part)
        k, v = part.split("=", 1)
        k, v = k.strip(), v.strip()
        if not LABEL_NAME.match(k) or k == "__name__":
            raise ValueError("invalid label name %r" % k)
        if k in labels:
            raise ValueError("label %r twice" % k)
        labels[k] = v
    return app, labels


class Request:
    def __init__(self, handler, body, t):
        self.time = t  # time.monotonic() when the body was read
        self.wall = time.time()
        self.method = handler.command
        url = urllib.parse.urlsplit(handler.path)
        self.path = url.path
        self.query = urllib.parse.parse_qs(url.query, keep_blank_values=True)
        self.headers = dict(handler.headers.items())
        self.body = body
        self.status = None
        self.problem = None
        self.pprof = None
        self.raw = None
        self.service = self.labels = None

    def q(self, key):
        v = self.query.get(key)
        return v[0] if v else None

    @property
    def interval(self):
        """(from, until) of the query, Unix seconds."""
        return int(self.q("from")), int(self.q("until"))

    def check(self, required_labels):
        """What Pyroscope would refuse in it, or None."""
        if self.method != "POST":
            return "method %s" % self.method
        if self.path != "/ingest":
            return "path %s" % self.path
        for key in ("name", "from", "until", "format", "sampleRate", "spyName"):
            if self.q(key) is None:
                return "no %s parameter" % key
        try:
            self.service, self.labels = parse_name(self.q("name"))
        except ValueError as e:
            return "name: %s" % e
        for k in required_labels:
            if k not in self.labels:
                return "name: no %s label in %r" % (k, self.q("name"))
        if self.labels.get("service_name", self.service) != self.service:
            return "service_name %r is not the name's service %r" % (
                self.labels.get("service_name"), self.service)
        if not (self.q("from").isdigit() and self.q("until").isdigit()):
            return "from/until not Unix seconds: %r %r" % (self.q("from"), self.q("until"))
        start, end, now = int(self.q("from")), int(self.q("until")), time.time()
        if start > end:
            return "from %d after until %d" % (start, end)
        if start < now - MAX_AGE or end > now + MAX_FUTURE:
            return "from/until %d/%d outside the window around %d" % (start, end, now)
        if self.q("format") != "pprof":
            return "format %r" % self.q("format")
        if not self.q("sampleRate").isdigit() or int(self.q("sampleRate")) <= 0:
            return "sampleRate %r" % self.q("sampleRate")
        if self.q("spyName") in REWRITING_SPIES:
            return "spyName %r rewrites function names" % self.q("spyName")
        if self.body[:2] != b"\x1f\x8b":
            return "body is not gzip"
        try:
            self.raw = gzip.decompress(self.body)
        except (OSError, EOFError) as e:
            return "body: %s" % e
        if len(self.raw) > MAX_BYTES:
            return "profile of %d bytes uncompressed (limit %d)" % (len(self.raw), MAX_BYTES)
        try:
            self.pprof = Pprof(self.raw)
        except (ValueError, IndexError, KeyError) as e:
            return "not a pprof: %r" % e
        if len(self.pprof.samples) > MAX_SAMPLES:
            return "%d samples (limit %d)" % (len(self.pprof.samples), MAX_SAMPLES)
        if not any("cpu" in t or "wall" in t for t in self.pprof.types):
            return "no cpu or wall sample type: %s" % self.pprof.types
        return None


class Receiver:
    """A threaded HTTP server on 127.0.0.1. respond(receiver, request) may return an
    HTTP status to answer instead of checking, or "hang" to read the request and never
    answer; None checks it (200, or 400 with the problem)."""

    def __init__(self, respond=None, required_labels=("service_name", "host")):
        self.respond = respond
        self.required = required_labels
        self.requests = []
        self.lock = threading.Lock()
        self.closing = threading.Event()
        rx = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n)
                rx.handle(self, Request(self, body, time.monotonic()))

            do_GET = do_PUT = do_POST

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = "http://127.0.0.1:%d" % self.port
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def handle(self, h, req):
        with self.lock:
            self.requests.append(req)
        action = self.respond(self, req) if self.respond else None
        if action == "hang":
            self.closing.wait()
            return
        if action is None:
            req.problem = req.check(self.required)
            status, text = (400, req.problem) if req.problem else (200, "")
        else:
            status, text = action, "as the test asked"
        req.status = status
        data = text.encode()
        try:
            h.send_response(status)
            h.send_header("Content-Type", "text/plain")
            h.send_header("Content-Length", str(len(data)))
            h.end_headers()
            h.wfile.write(data)
        except ConnectionError:
            req.status = "gone"  # the client gave up waiting (its timeout)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.closing.set()
        self.server.shutdown()
        self.server.server_close()
        return False

    def accepted(self):
        """Requests answered 200, in the order they came."""
        with self.lock:
            return [r for r in self.requests if r.status == 200]

    def problems(self):
        with self.lock:
            return ["%s: %s" % (r.q("name"), r.problem) for r in self.requests if r.problem]
