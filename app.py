"""Start the shardwise chat page: ``python app.py [--host 127.0.0.1] [--port 7860]``.

Builds the knowledge index on the first start (a minute or so), then serves the Gradio page
(``bot/surfaces/webui.py``). Binds to 127.0.0.1 unless told otherwise; nothing is sent off the machine.
"""

from __future__ import annotations

import argparse


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="shardwise: the DDP-or-FSDP chat page")
    parser.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=7860, help="port (default 7860)")
    args = parser.parse_args(argv)

    from bot.surfaces.webui import serve  # after argparse, so --help is instant

    serve(args.host, args.port)


if __name__ == "__main__":
    main()
