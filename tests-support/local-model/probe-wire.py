#!/usr/bin/env python3
"""Send the requests documented in WIRE_NOTES.md to a running local server and
print the raw exchanges (status, content-type, body; SSE bodies verbatim).

Usage: probe-wire.py [base_url] [case ...]    (default http://127.0.0.1:18080/v1)
       probe-wire.py --list
Standard library only. Each request has a timeout; nothing leaves 127.0.0.1
unless you pass another base URL.
"""
import http.client
import json
import sys
import time
import urllib.parse

TOOLS = [{
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather for a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}]
FORCE = {"type": "function", "function": {"name": "get_weather"}}
USER_WEATHER = {"role": "user", "content": "What is the weather in Paris?"}
TOOL_CALLS = [{"id": "call_1", "type": "function",
               "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]
TOOL_RESULT = {"role": "tool", "tool_call_id": "call_1",
               "content": "{\"temperature_c\": 18, \"sky\": \"sunny\"}"}
PERSON = {"type": "object",
          "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
          "required": ["name", "age"]}
INVENT = [{"role": "user", "content": "Invent a person. Reply in JSON."}]

CASES = {
    "models": ("GET", "/models", None),
    "chat": ("POST", "/chat/completions", {
        "model": "smollm2", "temperature": 0, "max_tokens": 40,
        "messages": [{"role": "user", "content": "What is the capital of France?"}]}),
    "chat_system": ("POST", "/chat/completions", {
        "model": "smollm2", "temperature": 0, "max_tokens": 40,
        "messages": [{"role": "system", "content": "You are a concise assistant."},
                     {"role": "user", "content": "What is the capital of France?"}]}),
    "stream": ("POST", "/chat/completions", {
        "model": "smollm2", "temperature": 0, "max_tokens": 8, "stream": True,
        "messages": [{"role": "user", "content": "Say hello."}]}),
    "stream_include_usage": ("POST", "/chat/completions", {
        "model": "smollm2", "temperature": 0, "max_tokens": 3, "stream": True,
        "stream_options": {"include_usage": True},
        "messages": [{"role": "user", "content": "Say hello."}]}),
    "tool_forced": ("POST", "/chat/completions", {
        "model": "smollm2", "temperature": 0, "max_tokens": 100,
        "messages": [USER_WEATHER], "tools": TOOLS, "tool_choice": FORCE}),
    "tool_forced_stream": ("POST", "/chat/completions", {
        "model": "smollm2", "temperature": 0, "max_tokens": 100, "stream": True,
        "messages": [USER_WEATHER], "tools": TOOLS, "tool_choice": FORCE}),
    "tool_auto": ("POST", "/chat/completions", {
        "model": "smollm2", "temperature": 0, "max_tokens": 20,
        "messages": [USER_WEATHER], "tools": TOOLS, "tool_choice": "auto"}),
    "tool_required": ("POST", "/chat/completions", {
        "model": "smollm2", "temperature": 0, "max_tokens": 20,
        "messages": [USER_WEATHER], "tools": TOOLS, "tool_choice": "required"}),
    "tool_result_empty_content": ("POST", "/chat/completions", {
        "model": "smollm2", "temperature": 0, "max_tokens": 40, "tools": TOOLS,
        "messages": [USER_WEATHER,
                     {"role": "assistant", "content": "", "tool_calls": TOOL_CALLS},
                     TOOL_RESULT]}),
    "tool_result_null_content": ("POST", "/chat/completions", {
        "model": "smollm2", "temperature": 0, "max_tokens": 40, "tools": TOOLS,
        "messages": [USER_WEATHER,
                     {"role": "assistant", "content": None, "tool_calls": TOOL_CALLS},
                     TOOL_RESULT]}),
    "tool_result_no_content": ("POST", "/chat/completions", {
        "model": "smollm2", "temperature": 0, "max_tokens": 40, "tools": TOOLS,
        "messages": [USER_WEATHER,
                     {"role": "assistant", "tool_calls": TOOL_CALLS},
                     TOOL_RESULT]}),
    "tool_result_no_tool_call_id": ("POST", "/chat/completions", {
        "model": "smollm2", "temperature": 0, "max_tokens": 20,
        "messages": [USER_WEATHER,
                     {"role": "assistant", "content": "", "tool_calls": TOOL_CALLS},
                     {"role": "tool", "content": "sunny"}]}),
    "content_parts_array": ("POST", "/chat/completions", {
        "model": "smollm2", "temperature": 0, "max_tokens": 20,
        "messages": [{"role": "user",
                      "content": [{"type": "text", "text": "What is the capital of France?"}]}]}),
    "json_object_schema": ("POST", "/chat/completions", {
        "model": "smollm2", "temperature": 0, "max_tokens": 60, "messages": INVENT,
        "response_format": {"type": "json_object", "schema": PERSON}}),
    "json_object": ("POST", "/chat/completions", {
        "model": "smollm2", "temperature": 0, "max_tokens": 60, "messages": INVENT,
        "response_format": {"type": "json_object"}}),
    "json_schema": ("POST", "/chat/completions", {
        "model": "smollm2", "temperature": 0, "max_tokens": 60, "messages": INVENT,
        "response_format": {"type": "json_schema",
                            "json_schema": {"name": "person", "schema": PERSON, "strict": True}}}),
    "embeddings_string": ("POST", "/embeddings", {
        "model": "smollm2-embed", "input": "The cat sat on the mat."}),
    "embeddings_array": ("POST", "/embeddings", {
        "model": "smollm2-embed", "input": ["The cat sat on the mat.", "A kitten", "The stock market fell"]}),
    "embeddings_chat_model": ("POST", "/embeddings", {
        "model": "smollm2", "input": "hello"}),
    "embeddings_empty_string": ("POST", "/embeddings", {
        "model": "smollm2-embed", "input": ""}),
    "embeddings_token_ids": ("POST", "/embeddings", {
        "model": "smollm2-embed", "input": [1, 2, 3]}),
    "unknown_model": ("POST", "/chat/completions", {
        "model": "gpt-4o", "temperature": 0, "max_tokens": 5,
        "messages": [{"role": "user", "content": "Hi"}]}),
    "bad_json": ("POST", "/chat/completions", '{"model":"smollm2","messages":[{"role":"user"'),
    "missing_messages": ("POST", "/chat/completions", {"model": "smollm2", "max_tokens": 5}),
    "bad_role": ("POST", "/chat/completions", {
        "model": "smollm2", "max_tokens": 5, "messages": [{"role": "developer", "content": "Hi"}]}),
    "context_too_long": ("POST", "/chat/completions", {
        "model": "smollm2", "max_tokens": 5,
        "messages": [{"role": "user", "content": "hello " * 2500}]}),
    "not_found": ("POST", "/nope", {}),
    "max_tokens_1": ("POST", "/chat/completions", {
        "model": "smollm2", "temperature": 0, "max_tokens": 1,
        "messages": [{"role": "user", "content": "Write one sentence about the sea."}]}),
    "stop": ("POST", "/chat/completions", {
        "model": "smollm2", "temperature": 0, "max_tokens": 25, "stop": ["sea"],
        "messages": [{"role": "user", "content": "Write one sentence about the sea."}]}),
    "stop_stream": ("POST", "/chat/completions", {
        "model": "smollm2", "temperature": 0, "max_tokens": 25, "stop": ["sea"], "stream": True,
        "messages": [{"role": "user", "content": "Write one sentence about the sea."}]}),
    "seed": ("POST", "/chat/completions", {
        "model": "smollm2", "temperature": 1, "seed": 42, "max_tokens": 25,
        "messages": [{"role": "user", "content": "Write one sentence about the sea."}]}),
    "n_2": ("POST", "/chat/completions", {
        "model": "smollm2", "temperature": 0, "max_tokens": 10, "n": 2,
        "messages": [{"role": "user", "content": "Write one sentence about the sea."}]}),
}


def run(base, name):
    method, path, body = CASES[name]
    u = urllib.parse.urlparse(base)
    conn = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=300)
    data = None
    headers = {}
    if body is not None:
        data = (body if isinstance(body, str) else json.dumps(body)).encode()
        headers["Content-Type"] = "application/json"
    t0 = time.time()
    conn.request(method, u.path.rstrip("/") + path, body=data, headers=headers)
    resp = conn.getresponse()
    raw = resp.read()
    dt = time.time() - t0
    print(f"### {name}: {method} {path}")
    if body is not None:
        shown = body if isinstance(body, str) else json.dumps(body)
        print("request:", shown if len(shown) < 1500 else shown[:1500] + "...")
    print(f"HTTP {resp.status} {resp.reason}; content-type: {resp.getheader('content-type')}; {dt:.2f}s")
    text = raw.decode("utf-8", "replace")
    if len(text) > 6000:
        text = text[:3000] + f"\n... [{len(raw)} bytes] ...\n" + text[-2500:]
    print(text)
    print()


def main():
    args = sys.argv[1:]
    if args and args[0] == "--list":
        print("\n".join(CASES))
        return
    base = "http://127.0.0.1:18080/v1"
    if args and args[0].startswith("http"):
        base = args.pop(0)
    for name in args or list(CASES):
        run(base, name)


if __name__ == "__main__":
    main()
