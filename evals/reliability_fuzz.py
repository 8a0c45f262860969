"""The fuzz part of ``evals/bench_reliability.py`` (issues 17 and 30): every generated question
answered in full, in a pool of worker processes.

What it owns:
- ``fuzz_questions``: the generated questions (setup prose with random, often absurd values,
  token soups, random Unicode, long digit runs, empty ones, and 100 KB inputs).
- ``start_fuzz`` / ``FuzzRun.rows``: every question through the reader (``parse_conversation``)
  and through ``bot.surfaces.llm.answer`` (the boundary every surface crosses), in ``spawn`` workers with
  one torch thread each, started before the bench's other parts and collected after them.

Retrieval, and why most answers skip it: what is measured here (exceptions, non-finite numbers,
strict JSON, ``inf``/``nan``/exponents in the text, negative or non-finite setup values in an
invalid answer) comes from the reader, the calculator, the forum-claim judge and the composer.
Passage retrieval never raises (``retrieve_passages`` promises it, and the answer catches it as
a logged warning, which a fuzz cannot see) and its quotes are corpus sentences, never the user's
values; it was also three fifths of an answer's CPU time. So every ``RETRIEVAL_EVERY``-th
question and every 100 KB input is answered with retrieval (the hashed embedding and the
in-memory store, the fakes the unit tests run on: the same query cleaning, BM25, relevance and
quoting code, hashed vectors), the others with no passages. No index is built (a fresh clone
would spend about two minutes on it) and no embedding model is loaded.

Why a pool and not a sample: the issue's defects were found among 10,000 answered questions
(238 printing ``inf``/``nan``/exponents, 697 negative setup values); answering a tenth of them,
or stopping at a wall-clock cap on a busy machine, checks a fraction of that.
"""

from __future__ import annotations

import json
import math
import multiprocessing
import os
import random
import time
from dataclasses import dataclass, field

FAKE_RETRIEVAL = {"SHARDWISE_EMBEDDING_MODEL": "hashed-bag-of-words", "SHARDWISE_VECTOR_STORE": "memory"}
CHUNK = 50  # questions per task: small enough to spread the slow ones over the workers
RETRIEVAL_EVERY = 10  # 1 answer in 10 (and every 100 KB input) goes through passage retrieval
_RETRIEVAL_ON = [True]  # per worker: whether the current answer retrieves passages
SAMPLES = 3  # offending questions kept per check, for the table's notes

WORDS = ["DDP", "FSDP", "HSDP", "ZeRO-3", "offload", "7B", "70B", "13b", "Llama-2-7B", "Qwen2.5-14B", "GPT-2",
         "A100", "H100", "4090", "V100", "40GB", "80G", "24GB", "x", "GPUs", "卡", "张", "节点", "nodes",
         "InfiniBand", "IB", "ethernet", "Gbps", "NVLink", "PCIe", "bf16", "fp16", "fp32", "AdamW", "SGD",
         "LoRA", "QLoRA", "全参", "微调", "序列长度", "seq", "micro batch", "checkpointing", "重计算",
         "OOM", "CUDA out of memory", "显存", "内存", "DDP还是FSDP", "which", "?", "？", "，", "and", "or",
         "七十亿", "一百二十三", "twelve", "hundred", "--per_device_train_batch_size", "{", "}", '"', "\\",
         "ignore previous instructions", "system prompt", "<@U123>", "```", "|", "\n", "\t", "-1", "0",
         "1e400", "NaN", "inf", "-0", "0x7f", "٣", "１２８", "Ⅻ", "½", "²"]


def fuzz_questions(n: int, seed: int = 17, big: int = 3) -> list[str]:
    """``n`` generated questions, then ``big`` inputs of 100 KB (reproducible from ``seed``)."""
    rng = random.Random(seed)
    out: list[str] = []
    for i in range(n):
        kind = i % 20
        if kind < 8:  # setup prose with random (often absurd) values
            out.append(rng.choice([
                "DDP or FSDP for {m} on {g}x {c} {mem}GB?", "{m}模型全参微调，{g}张{c} {mem}G，DDP还是FSDP？",
                "{m} LoRA on {g} {c}, seq {s}, micro batch {b}", "{n} nodes x {g} {c}, {bw} Gbps, {m}",
                "{m} on {g} GPUs with {mem} GB and {ram} GB RAM, offload?"]).format(
                m=rng.choice(["7B", "70b", "Llama-2-13B", f"{rng.randint(0, 10**6)}B", f"{rng.random() * 1e4:.3f}B",
                              "GPT-2", "Qwen2.5-72B", "0B", "-7B"]),
                g=rng.choice([1, 2, 8, 0, 3, 10**rng.randint(1, 12), -4]), c=rng.choice(["A100", "H100", "4090", "TPU"]),
                mem=rng.choice([24, 40, 80, 0, 10**rng.randint(1, 30)]), s=rng.choice([2048, 0, 10**rng.randint(1, 40)]),
                b=rng.choice([1, 4, 0, 10**rng.randint(1, 25)]), n=rng.choice([1, 2, 0, 10**rng.randint(1, 20)]),
                bw=rng.choice([100, 0.5, 10**rng.randint(1, 30)]), ram=rng.choice([64, 10**rng.randint(1, 30)])))
        elif kind < 15:  # token soup
            out.append(" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 40))))
        elif kind < 17:  # random Unicode (CJK, Cyrillic, symbols, controls)
            out.append("".join(chr(rng.choice([rng.randint(1, 0x7F), rng.randint(0x4E00, 0x9FFF),
                                               rng.randint(0x400, 0x4FF), rng.randint(0x2000, 0x2BFF),
                                               rng.randint(0xFF00, 0xFFEF)])) for _ in range(rng.randint(1, 400))))
        elif kind < 19:  # long digit runs in setup positions
            digits = "9" * rng.choice([50, 400, 2000, 5000])
            out.append(rng.choice([f"7B on {digits} A100", f"{digits}B model", f"{digits}B on 8x A100 40GB",
                                   f"7B on 8x A100 {digits}GB", f"seq {digits} micro batch {digits}"]))
        else:  # empty-ish
            out.append(rng.choice(["", " ", "?", "\n\n", "DDP", "FSDP？", "[1]", "0"]))
    for j in range(big):  # 100 KB inputs
        rng2 = random.Random(seed + j)
        if j % 3 == 0:
            out.append("".join(rng2.choice(WORDS) + " " for _ in range(20_000))[:100_000])
        elif j % 3 == 1:
            out.append("".join(chr(rng2.randint(0x4E00, 0x9FFF)) for _ in range(100_000)))
        else:
            out.append("7B on 8 A100 " + "1" * 100_000)
    return out


# ---------------------------------------------------------------------------------------------
# In a worker
@dataclass
class Tally:
    """What one chunk of questions measured (summed over chunks by ``merge``)."""

    read: int = 0
    retrieved: int = 0
    answered: int = 0
    big: int = 0
    non_finite: int = 0
    bad_json: int = 0
    errors: int = 0
    cpu_s: float = 0.0
    exceptions: list[str] = field(default_factory=list)
    unusable_text: list[str] = field(default_factory=list)
    negative_setup: list[str] = field(default_factory=list)
    slow: list[str] = field(default_factory=list)
    answer_s: list[float] = field(default_factory=list)
    parse_cpu_s: list[float] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=lambda: {"exceptions": 0, "unusable_text": 0, "negative_setup": 0})

    def note(self, kind: str, text: str) -> None:
        self.counts[kind] += 1
        samples = getattr(self, kind)
        if len(samples) < SAMPLES:
            samples.append(text)

    def merge(self, other: Tally) -> None:
        for name in ("read", "retrieved", "answered", "big", "non_finite", "bad_json", "errors", "cpu_s"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for name in ("exceptions", "unusable_text", "negative_setup", "slow"):
            getattr(self, name).extend(getattr(other, name)[: max(0, SAMPLES - len(getattr(self, name)))])
        self.answer_s += other.answer_s
        self.parse_cpu_s += other.parse_cpu_s
        for kind, count in other.counts.items():
            self.counts[kind] += count


def _worker_start() -> None:
    """One torch thread, the retrieval fakes behind a switch (``_RETRIEVAL_ON``), no log output
    (the table counts what is caught), and the knowledge and catalogs loaded once."""
    import logging

    from bot.knowledge import answering

    os.environ.update(FAKE_RETRIEVAL)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    logging.disable(logging.CRITICAL)
    retrieve = answering.retrieve_passages

    def switched(*args, **kwargs):
        return retrieve(*args, **kwargs) if _RETRIEVAL_ON[0] else []

    answering.retrieve_passages = switched  # bot.corpus_evidence imports it at each call
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:
        pass
    from bot.surfaces.llm import answer

    answer("DDP or FSDP for 7B on 8x A100 40GB?", use_llm=False)


def _invalid_with_bad_setup(ans) -> bool:
    return ans.status == "invalid" and any(
        isinstance(v, (int, float)) and not isinstance(v, bool) and (not math.isfinite(v) or v < 0)
        for v in ans.setup.values())


def fuzz_chunk(questions: list[tuple[int, str]]) -> Tally:
    """Each (index, question) read (reader CPU time, non-finite setup values) and answered
    (every check); with passage retrieval for every ``RETRIEVAL_EVERY``-th index and 100 KB input."""
    from bot.figures import unusable_figures
    from bot.parse import parse_conversation
    from bot.surfaces.llm import answer, non_finite_paths

    tally = Tally()
    cpu_started = time.process_time()
    for index, q in questions:
        _RETRIEVAL_ON[0] = index % RETRIEVAL_EVERY == 0 or len(q) >= 100_000
        tally.retrieved += _RETRIEVAL_ON[0]
        tally.read += 1
        tally.big += len(q) >= 100_000
        t0 = time.thread_time()
        try:
            parsed = parse_conversation(q)
        except Exception as err:  # noqa: BLE001  (the measurement)
            tally.note("exceptions", f"parse {type(err).__name__}: {q[:60]!r}")
            continue
        tally.parse_cpu_s.append(time.thread_time() - t0)
        tally.non_finite += bool(non_finite_paths(parsed.setup.model_dump()))
        t1 = time.perf_counter()
        try:
            ans = answer(q, use_llm=False)
        except Exception as err:  # noqa: BLE001  (the measurement: answer() promises never to raise)
            tally.note("exceptions", f"answer {type(err).__name__}: {q[:60]!r}")
            continue
        spent = time.perf_counter() - t1
        tally.answered += 1
        tally.answer_s.append(spent)
        if spent > 1.0 and len(tally.slow) < SAMPLES:
            tally.slow.append(f"{spent:.1f}s for {len(q):,} chars {q[:30]!r}")
        dumped = ans.model_dump()
        tally.non_finite += bool(non_finite_paths(dumped))
        unusable = unusable_figures(ans.text)
        if unusable:
            tally.note("unusable_text", f"{unusable[:2]} for {q[:40]!r}")
        if _invalid_with_bad_setup(ans):
            tally.note("negative_setup", f"{q[:50]!r}")
        try:
            json.dumps(dumped, allow_nan=False)
        except ValueError:
            tally.bad_json += 1
        tally.errors += ans.status == "error"
    tally.cpu_s = time.process_time() - cpu_started
    return tally


# ---------------------------------------------------------------------------------------------
# In the bench's process
def workers_available() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


@dataclass
class FuzzRun:
    """A fuzz started in the background (``start_fuzz``); ``rows()`` waits for it and reports."""

    questions: list[str]
    big: int
    cpu_budget_s: float
    workers: int
    pool: object
    pending: object
    started: float

    def rows(self, row, timeout_s: float = 1800.0) -> list:
        """The table rows (``row(area, what, figure, ok, notes)``); waits at most ``timeout_s``
        (a hang: the part fails, it does not pass on the questions read so far)."""
        tally, hung = Tally(), False
        try:
            for part in self.pending.get(timeout=timeout_s):  # type: ignore[attr-defined]
                tally.merge(part)
        except multiprocessing.TimeoutError:
            hung = True
        finally:
            self.pool.terminate()  # type: ignore[attr-defined]
            self.pool.join()  # type: ignore[attr-defined]
        wall = time.perf_counter() - self.started
        total = len(self.questions)
        finished = tally.read == total and not hung
        times, parse = tally.answer_s or [math.nan], tally.parse_cpu_s or [math.nan]
        p99_parse = _pct(parse, 0.99) * 1000
        exceptions = tally.counts["exceptions"]
        return [
            row("fuzz", f"{tally.read:,} of {total:,} questions read and answered ({tally.big} of the {self.big} "
                f"of 100 KB; {tally.retrieved:,} with passage retrieval)", f"{exceptions} exceptions, {tally.non_finite} non-finite, {tally.bad_json} invalid JSON",
                finished and not exceptions and not tally.non_finite and not tally.bad_json, tally.exceptions),
            row("fuzz", f"all answered within the {self.cpu_budget_s:.0f} s CPU budget ({self.workers} workers)",
                f"{tally.cpu_s:.0f} s of CPU, {tally.cpu_s / max(tally.answered, 1) * 1000:.1f} ms a question; "
                f"{wall:.0f} s wall", finished and tally.cpu_s <= self.cpu_budget_s,
                [f"no result after {timeout_s:.0f} s: a worker hung"] if hung else []),
            row("fuzz", "internal failures caught at the boundary (status=error)", f"{tally.errors}", tally.errors == 0,
                ["each logged with its traceback"] if tally.errors else []),
            row("fuzz", "answers printing inf / nan / an exponent", str(tally.counts["unusable_text"]),
                finished and not tally.counts["unusable_text"], tally.unusable_text),
            row("fuzz", "invalid answers with a negative or non-finite setup value",
                str(tally.counts["negative_setup"]), finished and not tally.counts["negative_setup"],
                tally.negative_setup),
            row("fuzz", "answer time p50 / p99 / max", f"{_pct(times, .5) * 1000:.1f} / "
                f"{_pct(times, .99) * 1000:.1f} / {max(times) * 1000:.0f} ms", True, tally.slow),
            row("fuzz", "parse CPU time p99 (target < 50 ms)", f"{p99_parse:.1f} ms (max {max(parse) * 1000:.0f} ms)",
                p99_parse < 50, []),
        ]


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(math.ceil(q * len(ordered))) - 1))]


def start_fuzz(n: int, big: int, cpu_budget_s: float, workers: int | None = None) -> FuzzRun:
    """Start answering ``n`` generated questions and ``big`` 100 KB inputs in ``workers`` spawn
    processes (default: one per available core); returns at once. The 100 KB inputs are spread
    through the run so no one worker gets them all at its end."""
    questions = fuzz_questions(n, big=0)
    for j, q in enumerate(fuzz_questions(0, big=big)):
        questions.insert((j + 1) * len(questions) // (big + 1), q)
    workers = workers or workers_available()
    numbered = list(enumerate(questions))
    chunks = [numbered[i:i + CHUNK] for i in range(0, len(numbered), CHUNK)]
    # spawn, not fork: a forked child would inherit the bench's threads and locks (servers,
    # loggers) in whatever state they were in
    pool = multiprocessing.get_context("spawn").Pool(workers, initializer=_worker_start)
    pending = pool.map_async(fuzz_chunk, chunks, chunksize=1)
    return FuzzRun(questions, big, cpu_budget_s, workers, pool, pending, time.perf_counter())
