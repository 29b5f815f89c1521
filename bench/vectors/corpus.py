"""Real English sentences for the real-embedding vector benchmark.

The vector benchmarks' default data are uniform random vectors, the worst
case for a graph index (no neighbourhood structure). To see what the HNSW
index does on what a RAG store holds, this gathers documentation prose that
is on every machine that built this repository: the docstrings of Python's
standard library and the doc comments (`///`, `//!`) of the Rust crates in
cargo's registry. Paragraphs are split into sentences; sentences of 30-300
characters with some words in them are kept, deduplicated, sorted, then
shuffled with a fixed seed, so the first N are a sample of the whole.

Usage: python3 bench/vectors/corpus.py COUNT OUT.json
Prints how many sentences were found; fails if fewer than COUNT.
"""

import ast
import json
import os
import random
import re
import sys
import sysconfig

SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
WORDS = re.compile(r"[a-zA-Z]{4} [a-zA-Z]{3}")


def sentences(paragraph):
    text = " ".join(paragraph.split())
    for s in SENTENCE_END.split(text):
        if 30 <= len(s) <= 300 and WORDS.search(s) and "```" not in s:
            yield s


def python_docstrings(found):
    root = sysconfig.get_paths()["stdlib"]
    for dirpath, _, files in os.walk(root):
        if "site-packages" in dirpath or "test" in dirpath.split(os.sep):
            continue
        for name in files:
            if not name.endswith(".py"):
                continue
            try:
                with open(os.path.join(dirpath, name), encoding="utf-8", errors="replace") as f:
                    tree = ast.parse(f.read())
            except (SyntaxError, ValueError, OSError):
                continue
            for node in ast.walk(tree):
                if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                    doc = ast.get_docstring(node)
                    for para in re.split(r"\n\s*\n", doc or ""):
                        found.update(sentences(para))


def rust_doc_comments(found):
    root = os.path.join(os.environ.get("CARGO_HOME", os.path.expanduser("~/.cargo")), "registry", "src")
    doc_line = re.compile(r"\s*//[/!]\s?(.*)")
    for dirpath, _, files in os.walk(root):
        for name in files:
            if not name.endswith(".rs"):
                continue
            try:
                with open(os.path.join(dirpath, name), encoding="utf-8", errors="replace") as f:
                    lines = f.read().split("\n")
            except OSError:
                continue
            para = []
            for line in lines + [""]:
                m = doc_line.match(line)
                if m and m.group(1).strip() and not m.group(1).startswith("#"):
                    para.append(m.group(1))
                elif para:
                    found.update(sentences(" ".join(para)))
                    para = []


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: corpus.py COUNT OUT.json")
    count = int(sys.argv[1])
    found = set()
    python_docstrings(found)
    rust_doc_comments(found)
    texts = sorted(found)
    random.Random(20261202).shuffle(texts)
    print(f"{len(texts)} sentences found", file=sys.stderr)
    if len(texts) < count:
        sys.exit(f"only {len(texts)} sentences, {count} asked for")
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        json.dump(texts[:count], f, ensure_ascii=False)


if __name__ == "__main__":
    main()
