"""Run llama-cpp-python's OpenAI-compatible server (`python -m llama_cpp.server`,
same arguments) with every configured model kept loaded.

Stock llama_cpp.server keeps ONE model in memory and, when a request names
another alias of a --config_file, closes the current one and loads the other.
That swap is slow, drops the prompt cache, and crashes the whole server
("double free or corruption") when the model being closed is an embedding model
whose last request failed (e.g. `"input": ""` -> 500 "llama_decode returned -1").

This wrapper replaces the model proxy: every alias is loaded at startup and
kept. Requests are still serialized by the server's own lock.

It also accepts OpenAI's standard structured-output request,
`"response_format": {"type": "json_schema", "json_schema": {"schema": S}}`,
as llama.cpp's own llama-server, vLLM and Ollama do: it is passed on as
`{"type": "json_object", "schema": S}`, the form this server takes (and
otherwise rejects the standard one with a 500). So a program written for
OpenAI, such as the README's quick start, runs here unchanged. Every other
request goes through untouched.

Usage: python serve.py --config_file <file.json>   (run with the venv's python)
"""
import json
from typing import Dict, List, Optional

import llama_cpp
import llama_cpp.server.app as server_app
from llama_cpp.server.model import LlamaProxy
from llama_cpp.server.settings import ModelSettings


class KeepLoadedLlamaProxy(LlamaProxy):
    def __init__(self, models: List[ModelSettings]) -> None:
        super().__init__(models)  # loads the default (first) model
        self._loaded: Dict[str, llama_cpp.Llama] = {
            self._current_model_alias: self._current_model,  # type: ignore[dict-item]
        }
        # Load the others now, so that startup fails early and timings are stable.
        for alias, settings in self._model_settings_dict.items():
            if alias not in self._loaded:
                self._loaded[alias] = self.load_llama_from_model_settings(settings)

    def __call__(self, model: Optional[str] = None) -> llama_cpp.Llama:
        if model is None or model not in self._model_settings_dict:
            model = self._default_model_alias
        llama = self._loaded.get(model)
        if llama is None:
            llama = self.load_llama_from_model_settings(self._model_settings_dict[model])
            self._loaded[model] = llama
        self._current_model = llama
        self._current_model_alias = model
        return llama

    def free(self):
        for llama in self._loaded.values():
            llama.close()
        self._loaded.clear()
        self._current_model = None


server_app.LlamaProxy = KeepLoadedLlamaProxy  # used by create_app -> set_llama_proxy


def standard_response_format(body: bytes) -> bytes:
    """`json_schema` response_format -> `json_object` + schema; else unchanged."""
    try:
        request = json.loads(body)
        fmt = request.get("response_format")
        if not (isinstance(fmt, dict) and fmt.get("type") == "json_schema"):
            return body
        schema = (fmt.get("json_schema") or {}).get("schema")
    except (ValueError, AttributeError):
        return body
    request["response_format"] = {"type": "json_object", "schema": schema}
    return json.dumps(request).encode()


class StandardResponseFormat:
    """ASGI middleware applying `standard_response_format` to chat requests."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if not (
            scope["type"] == "http"
            and scope["method"] == "POST"
            and scope["path"].endswith("/chat/completions")
        ):
            return await self.app(scope, receive, send)
        chunks = []
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return await self.app(scope, receive, send)
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        body = standard_response_format(b"".join(chunks))
        headers = [(k, v) for k, v in scope["headers"] if k.lower() != b"content-length"]
        headers.append((b"content-length", str(len(body)).encode()))
        scope = dict(scope, headers=headers)
        sent = False

        async def replay():
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        return await self.app(scope, replay, send)


_create_app = server_app.create_app


def create_app(*args, **kwargs):
    app = _create_app(*args, **kwargs)
    app.add_middleware(StandardResponseFormat)
    return app


server_app.create_app = create_app  # imported by name by llama_cpp.server.__main__ below

if __name__ == "__main__":
    from llama_cpp.server.__main__ import main

    main()
