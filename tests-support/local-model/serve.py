"""Serve one GGUF model over llama.cpp's own OpenAI-compatible HTTP server
(llama-server), run in this process by PyPI `xllamacpp`, which ships it
prebuilt for CPU (no compiler, no build).

llama-server listens on a private 127.0.0.1 port; this script answers on the
public one and passes every request through unchanged but one kind, see
"Forced function calls" below. Standard library only besides xllamacpp.

One server, one base URL, chat and embeddings: the model answers to every
--alias (the first, sorted, is the name /v1/models reports), and its context
has embeddings on with mean pooling, which llama-server switches on per
request, so chat requests still generate. Why each setting (WIRE_NOTES.md,
"Server setup"):
  mean pooling     the GGUF declares no pooling type; without one,
                   /v1/embeddings returns a vector per token.
  n_batch = n_ctx  an embedding input must fit in one batch.
  no prompt cache  with it, a repeated prompt only re-evaluates its last
                   token and greedy answers differ from a cold run's.
  one slot         requests run one at a time, each to completion.
  repeat penalty   1.1 by default, as llama-cpp-python's server had.

Forced function calls: llama-server takes `tool_choice` only as a string
(a named function, `{"type": "function", "function": {"name": N}}`, is
ignored with a warning) and, for a chat template without tool support such
as SmolLM2's, answers in plain text even with "required". OpenAI's named
form is what clients send to force one tool (genkit-openai does for
`toolChoice: required` with one tool). A request naming a function is sent
on without its tools, constrained by a `json_schema` response_format to the
function's parameters (llama-server's grammar); the JSON text that comes
back is returned as that function's call, in OpenAI's `tool_calls` shape,
streamed or not. That is how llama-cpp-python's server, used before, did
it too: the tool definitions are not put in the prompt.

Usage: python serve.py --model <gguf> --port <port> --alias NAME [--alias NAME ...]
       [--host 127.0.0.1] [--threads N] [--ctx N] [--max-tokens N] [--verbose]
Prints "listening on <url>" once the model is loaded and the port is open,
then serves until SIGTERM or SIGINT.
"""
import argparse
import http.client
import json
import os
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse

import xllamacpp

# Response headers not copied from llama-server: the proxy sets its own
# framing.
HOP_HEADERS = {"connection", "keep-alive", "transfer-encoding", "content-length"}


def llama_params(args):
    p = xllamacpp.CommonParams()
    p.model.path = args.model
    p.model_alias = set(args.alias)
    p.hostnames = ["127.0.0.1"]
    p.port = 0  # any free port: only this process talks to it
    p.n_ctx = args.ctx
    p.n_batch = args.ctx
    p.n_ubatch = args.ctx
    p.n_parallel = 1
    p.cache_prompt = False
    p.embedding = True
    p.pooling_type = xllamacpp.llama_pooling_type.LLAMA_POOLING_TYPE_MEAN
    # llama-server's default repeat penalty is none (1.0); llama-cpp-python's
    # server, which this replaces, used 1.1 over the last 64 tokens. Without
    # it SmolLM2 loops on a phrase until the context is full whenever a
    # request sets no max_tokens (the README quick start sets none), even
    # at temperature 0. A request's own repeat_penalty still wins.
    p.sampling.penalty_repeat = 1.1
    p.sampling.penalty_last_n = 64
    # The most tokens one answer gets (llama-server's n_predict: the default
    # for a request that sets no max_tokens, and a cap for one that asks for
    # more). Without it an answer at the default temperature 0.8 can run on
    # for a thousand tokens: the README quick start's two free-text answers
    # once took 115 s of a loaded CI machine instead of about 20.
    p.n_predict = args.max_tokens
    p.cpuparams.n_threads = args.threads
    p.cpuparams_batch.n_threads = args.threads
    # Callers send several requests at once (genkit dev:test-model runs its
    # cases concurrently): threads to accept them all; the one slot still
    # runs them in turn.
    p.n_threads_http = 16
    if not args.verbose:
        p.verbosity = 1
    return p


def forced_function(request):
    """The tool a chat request forces by name, or None."""
    choice = request.get("tool_choice")
    if not (isinstance(choice, dict) and choice.get("type") == "function"):
        return None
    named = choice.get("function")
    name = named.get("name") if isinstance(named, dict) else None
    for tool in request.get("tools") or []:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and function.get("name") == name:
            return function
    return None


def constrain_to(request, function):
    """The request without tools, its output held to the function's parameters."""
    request = {
        k: v
        for k, v in request.items()
        if k not in ("tools", "tool_choice", "parallel_tool_calls", "response_format")
    }
    schema = function.get("parameters") or {"type": "object"}
    request["response_format"] = {
        "type": "json_schema",
        "json_schema": {"name": function["name"], "schema": schema},
    }
    return request


def call_id(completion):
    return "call_" + str(completion.get("id", "")).removeprefix("chatcmpl-")


def finish(reason):
    # A complete call ends with "tool_calls" as on OpenAI; a cut one
    # ("length") says so.
    return "tool_calls" if reason == "stop" else reason


def as_tool_call(completion, name):
    """A non-streamed completion whose text is the arguments -> a tool call."""
    for choice in completion.get("choices") or []:
        message = choice.get("message") or {}
        message["tool_calls"] = [
            {
                "id": call_id(completion),
                "type": "function",
                "function": {"name": name, "arguments": message.get("content") or ""},
            }
        ]
        message["content"] = None
        choice["message"] = message
        choice["finish_reason"] = finish(choice.get("finish_reason"))
    return completion


class ChunkToToolCall:
    """Streamed chunks whose text is the arguments -> tool-call deltas."""

    def __init__(self, name):
        self.name = name
        self.started = False

    def __call__(self, chunk):
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            text = delta.pop("content", None)
            if text:
                call = {"index": 0, "function": {"arguments": text}}
                if not self.started:
                    # The first fragment names the call, later ones only
                    # add arguments (OpenAI's stream shape).
                    call.update(id=call_id(chunk), type="function")
                    call["function"]["name"] = self.name
                    self.started = True
                delta["tool_calls"] = [call]
            elif "role" in delta:
                delta["content"] = None
            choice["delta"] = delta
            if choice.get("finish_reason"):
                choice["finish_reason"] = finish(choice["finish_reason"])
        return chunk


class Proxy(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    upstream = ("127.0.0.1", 0)  # set in main()

    def log_message(self, *args):  # no access log
        pass

    def do_GET(self):
        self.forward()

    def do_POST(self):
        self.forward()

    def do_OPTIONS(self):
        self.forward()

    def do_DELETE(self):
        self.forward()

    def forward(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        function = None
        if self.command == "POST" and self.path.rstrip("/").endswith("/chat/completions"):
            try:
                request = json.loads(body)
                function = forced_function(request) if isinstance(request, dict) else None
            except ValueError:
                function = None  # llama-server answers the malformed body itself
            if function is not None:
                body = json.dumps(constrain_to(request, function)).encode()
        headers = {
            k: v
            for k, v in self.headers.items()
            if k.lower() not in HOP_HEADERS and k.lower() != "host"
        }
        headers["Content-Length"] = str(len(body))
        conn = http.client.HTTPConnection(*self.upstream, timeout=3600)
        try:
            conn.request(self.command, self.path, body=body, headers=headers)
            resp = conn.getresponse()
            if resp.getheader("Content-Type", "").startswith("text/event-stream"):
                self.relay_stream(resp, function)
            else:
                self.relay_body(resp, function)
        except (OSError, http.client.HTTPException) as e:
            self.fail(f"local model server unreachable: {e}")
        finally:
            conn.close()

    def start(self, resp, extra):
        # llama-server's own headers (Server, CORS, …), not the proxy's.
        self.send_response_only(resp.status, resp.reason)
        for k, v in resp.getheaders():
            if k.lower() not in HOP_HEADERS:
                self.send_header(k, v)
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()

    def relay_body(self, resp, function):
        data = resp.read()
        if function is not None and resp.status == 200:
            try:
                data = json.dumps(as_tool_call(json.loads(data), function["name"])).encode()
            except ValueError:
                pass
        self.start(resp, [("Content-Length", str(len(data)))])
        self.wfile.write(data)

    def relay_stream(self, resp, function):
        # No length: the stream ends when the connection closes.
        self.close_connection = True
        self.start(resp, [("Connection", "close")])
        convert = ChunkToToolCall(function["name"]) if function is not None else None
        while True:
            line = resp.readline()
            if not line:
                break
            if convert is not None and line.startswith(b"data: {"):
                try:
                    chunk = convert(json.loads(line[len(b"data: "):]))
                    line = b"data: " + json.dumps(chunk).encode() + b"\n"
                except ValueError:
                    pass
            self.wfile.write(line)
            if line in (b"\n", b"\r\n"):
                self.wfile.flush()  # one SSE event at a time, as it comes
        self.wfile.flush()

    def fail(self, message):
        data = json.dumps(
            {"error": {"message": message, "type": "server_error", "code": 502}}
        ).encode()
        try:
            self.send_response(502)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            pass


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--alias", action="append", default=[])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--ctx", type=int, default=2048)
    ap.add_argument("--max-tokens", type=int, default=512)
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    if not args.alias:
        ap.error("at least one --alias is needed")

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())

    # Bind the public port first: a port already taken fails before the
    # model is loaded.
    public = ThreadingHTTPServer((args.host, args.port), Proxy)
    public.daemon_threads = True
    llama = xllamacpp.Server(llama_params(args))
    address = urlparse(llama.listening_address)
    Proxy.upstream = (address.hostname, address.port)
    threading.Thread(target=public.serve_forever, daemon=True).start()
    print(f"listening on http://{args.host}:{args.port} (llama-server at {llama.listening_address})",
          flush=True)
    while not stop.wait(1):
        pass
    # llama-server's threads are native and would keep the process alive:
    # leave without waiting for them (requests in flight are dropped, as
    # with any stopped server).
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
