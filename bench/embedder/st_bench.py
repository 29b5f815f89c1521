"""sentence-transformers' side of bench/embedder/run.sh: embeds the same
texts as the Rust example (a JSON array, repeated) with the same model
folder and batch size, and prints one JSON line per round: wall seconds and
the process's CPU seconds (user + system, all threads, time.process_time()),
which other processes' load on a shared machine disturbs far less."""
import argparse
import json
import time

import torch
from sentence_transformers import SentenceTransformer

p = argparse.ArgumentParser()
p.add_argument("texts")
p.add_argument("--model-dir", required=True)
p.add_argument("--repeat", type=int, default=1)
p.add_argument("--rounds", type=int, default=3)
p.add_argument("--batch-size", type=int, default=32)
a = p.parse_args()

texts = json.load(open(a.texts, encoding="utf-8")) * a.repeat
started = time.perf_counter()
model = SentenceTransformer(a.model_dir, device="cpu")
load_ms = (time.perf_counter() - started) * 1e3
model.encode(texts[:64], batch_size=a.batch_size)  # warm-up, as on the Rust side
for r in range(a.rounds):
    cpu_started = time.process_time()
    started = time.perf_counter()
    vectors = model.encode(texts, batch_size=a.batch_size, convert_to_numpy=True)
    secs = time.perf_counter() - started
    cpu_secs = time.process_time() - cpu_started
    assert len(vectors) == len(texts)
    threads = torch.get_num_threads()
    print(json.dumps({
        "impl": f"sentence-transformers (torch {torch.__version__}, {threads} threads)",
        "round": r, "texts": len(texts), "seconds": round(secs, 4),
        "textsPerSecond": round(len(texts) / secs, 2),
        "cpuSeconds": round(cpu_secs, 2),
        "textsPerCpuSecond": round(len(texts) / cpu_secs, 2) if cpu_secs > 0 else None,
        "threads": threads, "loadMs": round(load_ms, 1),
    }), flush=True)
