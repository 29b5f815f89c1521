"""One round of bench/local-model/run.sh for llama.cpp (llama-cpp-python):
load time, prompt and decode speed, RSS and the cost of a JSON-schema
grammar per token, on the same GGUF and the same prompt token ids as
genkit-local-model's decode_bench example. Prints one JSON line.

    python llama_cpp_bench.py <model.gguf> <prompt-ids.json> [max_tokens]

Run it with a llama.cpp built without native CPU detection (AMX faults on
this VM): the llama-cpp-python 0.3.36 venv that
plugins/local-model/tests/fixtures/llama_cpp_reference.py shows how to build.
"""

import json
import statistics
import sys
import time

import llama_cpp
from llama_cpp import Llama, LlamaGrammar

SCHEMA = {
    "type": "object",
    "properties": {
        "title": {"type": "string", "maxLength": 40},
        "characters": {"type": "array", "items": {"type": "string", "maxLength": 20}, "maxItems": 3},
        "mood": {"enum": ["calm", "sad", "hopeful", "tense"]},
        "summary": {"type": "string", "maxLength": 120},
    },
    "required": ["title", "characters", "mood", "summary"],
    "additionalProperties": False,
}


def rss_mib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1]) / 1024
    return None


def greedy(llm, ids, max_tokens, eos, grammar=None):
    """Token timestamps of a greedy answer (end of turn excluded)."""
    stamps, tokens = [], []
    for token in llm.generate(ids, temp=0.0, top_k=1, top_p=1.0, reset=True, grammar=grammar):
        if token == eos:
            break
        stamps.append(time.perf_counter())
        tokens.append(token)
        if len(tokens) >= max_tokens:
            break
    return stamps, tokens


def per_token_ms(stamps):
    return (stamps[-1] - stamps[0]) * 1e3 / (len(stamps) - 1)


def main(path, ids_path, max_tokens=48):
    ids = json.load(open(ids_path))
    rss_before = rss_mib("VmRSS:")
    started = time.perf_counter()
    llm = Llama(model_path=path, n_ctx=1024, n_batch=512, n_threads=2, verbose=False, seed=0)
    load_seconds = time.perf_counter() - started
    eos = int(llm.metadata["tokenizer.ggml.eos_token_id"])

    prompt_times = []
    for _ in range(3):
        llm.reset()
        started = time.perf_counter()
        llm.eval(ids)
        prompt_times.append(time.perf_counter() - started)
    prompt_seconds = statistics.median(prompt_times)

    stamps, tokens = greedy(llm, ids, max_tokens, eos)

    # The grammar's cost: the same schema-constrained answer as the Rust
    # side (a different prompt text is not needed to compare per-token
    # cost), time per token with the grammar minus without it over the
    # same number of tokens.
    grammar = LlamaGrammar.from_json_schema(json.dumps(SCHEMA), verbose=False)
    g_stamps, g_tokens = greedy(llm, ids, 48, eos, grammar=grammar)
    free_stamps, _ = greedy(llm, ids, len(g_tokens), eos)
    answer = llm.detokenize(tokens).decode("utf-8", errors="replace")
    print(json.dumps({
        "impl": f"llama.cpp (llama-cpp-python {llama_cpp.__version__})",
        "loadSeconds": load_seconds,
        "promptTokens": len(ids),
        "promptSeconds": prompt_seconds,
        "promptTokensPerSecond": len(ids) / prompt_seconds,
        "decodeTokens": len(stamps) - 1,
        "decodeMsPerToken": per_token_ms(stamps),
        "decodeTokensPerSecond": 1e3 / per_token_ms(stamps),
        "rssMiB": rss_mib("VmRSS:"),
        "peakRssMiB": rss_mib("VmHWM:"),
        "rssBeforeLoadMiB": rss_before,
        "grammarTokens": len(g_tokens),
        "grammarMsPerToken": per_token_ms(g_stamps),
        "sameLengthFreeMsPerToken": per_token_ms(free_stamps) if len(free_stamps) > 1 else None,
        "answer": answer,
        "constrainedAnswer": llm.detokenize(g_tokens).decode("utf-8", errors="replace"),
    }, ensure_ascii=False))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], *(int(a) for a in sys.argv[3:4]))
