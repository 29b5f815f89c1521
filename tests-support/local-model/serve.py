"""Run llama-cpp-python's OpenAI-compatible server (`python -m llama_cpp.server`,
same arguments) with every configured model kept loaded.

Stock llama_cpp.server keeps ONE model in memory and, when a request names
another alias of a --config_file, closes the current one and loads the other.
That swap is slow, drops the prompt cache, and crashes the whole server
("double free or corruption") when the model being closed is an embedding model
whose last request failed (e.g. `"input": ""` -> 500 "llama_decode returned -1").

This wrapper replaces only the model proxy: every alias is loaded at startup
and kept. The HTTP layer (routes, validation, SSE, errors) is untouched.
Requests are still serialized by the server's own lock.

Usage: python serve.py --config_file <file.json>   (run with the venv's python)
"""
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

if __name__ == "__main__":
    from llama_cpp.server.__main__ import main

    main()
