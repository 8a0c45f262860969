"""Preparing the page's server process: one torch thread, the knowledge index built, and
Gradio's per-request work made lighter (``lighten_sessions``)."""

from __future__ import annotations

import logging

import gradio as gr

QUEUE_POLL_SECONDS = 0.005  # how often Gradio's queue looks for work (its default: 1 ms; see lighten_sessions)


def prepare_server() -> None:
    """One torch thread (cores are shared), logging with secrets redacted, the index built."""
    from bot import env

    if hasattr(env, "configure_runtime"):
        env.configure_runtime(threads=1)
    else:  # pragma: no cover  (older bot.env)
        try:
            import torch

            torch.set_num_threads(1)
        except ImportError:
            pass
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from bot.tools import prepare_knowledge

    prepare_knowledge()


def lighten_sessions(demo) -> None:
    """Cut Gradio's per-request work in the server's process (it is the serial part once answers
    run in workers; measured with cProfile on the event loop under 50 clients):

    - every new session (each ``/chat`` call, each tab) copies the config of all ~60 blocks, and
      for the upload/download buttons that means a pydantic JSON schema each time (about a third
      of that copy). Their schema is fixed once the page is built, so it is computed once here;
      each call gets its own copy;
    - after every event the queue rebuilt a pandas table of up to 10,000 past events for the
      monitoring dashboard, which this page turns off (``enable_monitoring=False``);
    - the queue looks for work every 1 ms, idle or full (about 5% of a core doing nothing, the
      same share taken from answers under load); every 5 ms adds at most 5 ms to an answer that
      takes 60 ms or more.
    """
    import functools

    import orjson  # a JSON round trip copies a schema ~10x faster than copy.deepcopy

    for block in demo.blocks.values():
        if not isinstance(block, gr.UploadButton | gr.DownloadButton):
            continue
        for name in ("api_info", "api_info_as_input", "api_info_as_output"):
            method = getattr(block, name, None)
            if method is None:
                continue
            setattr(block, name, functools.partial(orjson.loads, orjson.dumps(method())))
    queue = getattr(demo, "_queue", None)
    if queue is not None and hasattr(queue, "ANAYLTICS_CACHE_FREQUENCY"):  # gradio's spelling
        queue.ANAYLTICS_CACHE_FREQUENCY = 2**62  # never rebuilt: the dashboard is off
    if queue is not None and getattr(queue, "sleep_when_free", 1.0) < QUEUE_POLL_SECONDS:
        queue.sleep_when_free = QUEUE_POLL_SECONDS
