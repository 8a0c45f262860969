"""The LangChain ``estimate_memory`` tool takes the model and card inputs the CLI takes (issue 13):
a Hugging Face ``config.json`` as a path, pasted JSON or a JSON object, or a Hub id (fetched
config-only from a fake Hub endpoint on 127.0.0.1, cached in the data dir; offline, the message
"no network: paste the config.json or pass --config PATH"), and a card the catalog lacks with its
memory size, marked. Its figures equal ``shardwise calc --config ... --json``'s.

``FakeHub``/``fake_hub`` are shared with tests/unit/test_mcp.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from click.testing import CliRunner

from bot.calc.cli import calc as calc_command
from bot.catalog import lookup_model
from bot.catalog.hf_config import OFFLINE_MESSAGE, hf_config_for
from bot.env import repo_root
from bot.tools import make_tools
from tests.netutil import NO_HUB_RETRIES

H100x8 = {"gpu": "H100", "gpu_count": 8}


def estimate_tool():
    return next(t for t in make_tools() if t.name == "estimate_memory")


def cli_numbers(*args: str) -> dict:
    """``shardwise calc ... --json``: the numbers the CLI prints for the same inputs."""
    result = CliRunner().invoke(calc_command, [*args, "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    return {k: v for k, v in data.items() if k.startswith(("memory.", "comm.", "time."))}


def memory_numbers(numbers: dict) -> dict:
    return {k: v for k, v in numbers.items() if k.startswith("memory.")}


@pytest.fixture()
def llama_1b_dir(tmp_path):
    folder = tmp_path / "Llama-3.2-1B"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(hf_config_for("Llama-3.2-1B")))
    return folder


# --- a fake Hub on 127.0.0.1 ---------------------------------------------------------------------


class FakeHub(BaseHTTPRequestHandler):
    """Serves ``/{org}/{name}/resolve/{revision}/config.json`` with the headers huggingface_hub
    reads (ETag, X-Repo-Commit); anything else is a 404/401 with the Hub's error headers."""

    configs: dict[str, bytes] = {}
    requests: list[str] = []

    def _reply(self, with_body: bool) -> None:
        self.requests.append(f"{self.command} {self.path}")
        parts = self.path.split("?")[0].strip("/").split("/")
        repo = "/".join(parts[:2])
        if repo in self.configs and len(parts) >= 5 and parts[2] == "resolve" and parts[-1] == "config.json":
            body = self.configs[repo]
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("ETag", '"tools-test-etag"')
            self.send_header("X-Repo-Commit", "f" * 40)
            self.end_headers()
            if with_body:
                self.wfile.write(body)
            return
        self.send_response(401 if repo not in self.configs else 404)
        self.send_header("X-Error-Code", "RepoNotFound" if repo not in self.configs else "EntryNotFound")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_HEAD(self):  # noqa: N802  (http.server's naming)
        self._reply(False)

    def do_GET(self):  # noqa: N802
        self._reply(True)

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def fake_hub(configs: dict[str, dict]):
    """A fake Hub endpoint URL on 127.0.0.1 serving ``configs`` ({repo id: config dict}); the
    server object is yielded too so a test can stop it mid-session (the network going away)."""
    FakeHub.configs = {repo: json.dumps(cfg).encode() for repo, cfg in configs.items()}
    FakeHub.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeHub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", server
    finally:
        server.shutdown()
        server.server_close()


def hub_env(endpoint: str, data_dir) -> dict[str, str]:
    """A child's environment with the Hub reachable at ``endpoint`` (huggingface_hub reads
    HF_HUB_OFFLINE when it is imported, so online mode needs a process of its own)."""
    return {**os.environ, "HF_HUB_OFFLINE": "0", "TRANSFORMERS_OFFLINE": "0", "HF_ENDPOINT": endpoint,
            "SHARDWISE_DATA_DIR": str(data_dir), "PYTHONPATH": str(repo_root())}


# --- the tool -----------------------------------------------------------------------------------


def test_a_config_path_gives_the_numbers_the_cli_gives(llama_1b_dir):
    tool = estimate_tool()
    for path in (llama_1b_dir, llama_1b_dir / "config.json"):  # a folder or the file
        out = tool.invoke({"hf_config": str(path), **H100x8})
        assert "error" not in out, out
        assert memory_numbers(out["numbers"]) == memory_numbers(
            cli_numbers("--config", str(path), "--gpu", "H100", "--gpus", "8"))
        assert out["model_from_config"]["params"] == lookup_model("Llama-3.2-1B").params
        assert out["model_from_config"]["name"] == "Llama-3.2-1B"  # the folder's name


def test_pasted_json_and_a_json_object_are_read_like_the_file(llama_1b_dir):
    tool = estimate_tool()
    from_file = tool.invoke({"hf_config": str(llama_1b_dir), **H100x8})
    text = (llama_1b_dir / "config.json").read_text()
    pasted = tool.invoke({"hf_config": text, **H100x8})
    as_object = tool.invoke({"hf_config": json.loads(text), **H100x8})
    assert pasted["numbers"] == as_object["numbers"] == from_file["numbers"]
    assert pasted["model_from_config"]["source"] == "pasted JSON"  # the text is not echoed back
    assert as_object["model_from_config"]["source"] == "a JSON object"


def test_an_moe_config_reports_total_and_active_parameters():
    spec = lookup_model("Qwen3-30B-A3B")
    out = estimate_tool().invoke({"hf_config": json.dumps(hf_config_for(spec)), **H100x8})
    model = out["model_from_config"]
    assert model["kind"] == "moe" and model["params"] == spec.params and model["active_params"] == spec.active_params
    assert model["active_params"] < model["params"] / 5  # ~3.3B of ~30.5B
    assert any("Expert parallelism" in c for c in model["caveats"])
    # the same figures as the catalog entry of that model
    by_name = estimate_tool().invoke({"model": "Qwen3-30B-A3B", **H100x8})
    assert memory_numbers(out["numbers"]) == memory_numbers(by_name["numbers"])


def test_a_hub_id_offline_answers_with_the_message():
    from huggingface_hub import constants

    assert constants.is_offline_mode()  # bot.env sets HF_HUB_OFFLINE=1 for the test process
    out = estimate_tool().invoke({"hf_config": "meta-llama/Llama-3.1-8B", **H100x8})
    assert out["error"] == f"hf_config: {OFFLINE_MESSAGE}" and "numbers" not in out


@pytest.mark.parametrize("hf_config, message", [
    ('{"model_type": "llama", "hidden_size": 4096,', "not valid JSON"),
    ('["not", "an", "object"]', "not an object"),
    ('{"model_type": "llama"}', "no hidden_size"),
    ("/no/such/dir/config.json", "no file /no/such/dir/config.json"),
    ("not a config", "neither a config.json"),
])
def test_a_bad_config_gives_a_short_clear_error(hf_config, message):
    out = estimate_tool().invoke({"hf_config": hf_config, **H100x8})
    assert out["error"].startswith("hf_config: ") and message in out["error"], out
    assert len(out["error"]) <= 400 and "numbers" not in out


@pytest.mark.parametrize("hf_config", ["名" * 50_000, "\x00" * 1000, {}, "x" * 300 + "/config.json"])
def test_a_hostile_config_is_one_short_line_that_does_not_echo_it(hf_config):
    out = estimate_tool().invoke({"hf_config": hf_config, **H100x8})
    assert out["error"].startswith("hf_config: ") and len(out["error"]) <= 300, out["error"][:400]
    assert "名名名" not in out["error"] and "\x00" not in out["error"] and "\n" not in out["error"]


def test_config_and_a_model_name_together_are_refused_as_the_cli_refuses_them(llama_1b_dir):
    out = estimate_tool().invoke({"hf_config": str(llama_1b_dir), "model": "Llama-2-7B", **H100x8})
    assert "not both" in out["error"]
    out = estimate_tool().invoke({"hf_config": str(llama_1b_dir), "params_b": 7, **H100x8})
    assert "not both" in out["error"]


def test_a_card_the_catalog_lacks_is_accepted_with_its_memory_and_marked():
    tool = estimate_tool()
    args = {"model": "Llama-2-7B", "gpu": "RTX 6000 Blackwell", "gpu_memory_gb": 96, "gpu_count": 2}
    out = tool.invoke(args)
    card = out["gpu_card"]
    assert card["in_catalog"] is False and card["approximate"] is True and card["memory_gb"] == 96
    assert "not in catalog" in card["name"] and "placeholders" in card["note"]
    assert memory_numbers(out["numbers"]) == memory_numbers(cli_numbers(
        "--model", "Llama-2-7B", "--gpu", "RTX 6000 Blackwell", "--gpu-memory-gb", "96", "--gpus", "2"))
    # without its memory size it is an error naming the card, as in the CLI
    out = tool.invoke({"model": "Llama-2-7B", "gpu": "RTX 6000 Blackwell", "gpu_count": 2})
    assert "error" in out and any("gpu" in p for p in out["problems"])
    # a catalog card is marked as one
    assert tool.invoke({"model": "Llama-2-7B", **H100x8})["gpu_card"]["in_catalog"] is True


def test_simulate_memory_takes_hf_config_or_model():
    tool = next(t for t in make_tools() if t.name == "simulate_memory")
    options = {"gpu_count": 2, "strategy": "fsdp_full_shard"}
    assert "pass either" in tool.invoke(options)["error"]
    assert "pass either" in tool.invoke({"model": "tiny", "hf_config": "acme/x", **options})["error"]
    assert tool.invoke({"hf_config": "acme/x", **options})["error"] == f"hf_config: {OFFLINE_MESSAGE}"
    # a config too large to simulate inside a tool call: how to record it instead
    big = tool.invoke({"hf_config": hf_config_for("Llama-3.2-1B"), **options})
    assert big["stored"] is False and "bench simulate --config" in big["message"]
    assert "hf_config" in tool.args_schema.model_json_schema()["properties"]


_CHILD = NO_HUB_RETRIES + """
import json, os, sys
from bot.tools import make_tools
tool = next(t for t in make_tools() if t.name == "estimate_memory")
for repo, endpoint in json.loads(sys.argv[1]):
    os.environ["HF_ENDPOINT"] = endpoint  # read on every fetch (bot.catalog.hf_config.fetch_hub_config)
    out = tool.invoke({"hf_config": repo, "gpu": "H100", "gpu_count": 8})
    print(json.dumps({k: out.get(k) for k in ("error", "model_from_config")}))
"""


def _tool_in_child(calls: list[tuple[str, str]], data_dir) -> list[dict]:
    """The tool's answers for ``(repo id, endpoint)`` calls, in one child process with the Hub online."""
    done = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(calls)], env=hub_env(calls[0][1], data_dir),
                          capture_output=True, text=True, timeout=180, cwd=repo_root())
    assert done.returncode == 0, done.stderr[-2000:]
    return [json.loads(line) for line in done.stdout.strip().splitlines()[-len(calls):]]


@pytest.mark.slow
def test_a_hub_id_is_fetched_config_only_from_the_endpoint_and_cached(tmp_path):
    from bot.env import free_port

    down = f"http://127.0.0.1:{free_port()}"  # no Hub reachable there
    with fake_hub({"acme/moe-small": hf_config_for("Qwen3-30B-A3B")}) as (endpoint, _):
        served, missing, cached, other = _tool_in_child(
            [("acme/moe-small", endpoint), ("acme/missing", endpoint), ("acme/moe-small", down),
             ("acme/other", down)], tmp_path)
        assert FakeHub.requests and all("config.json" in r for r in FakeHub.requests)  # never weights
    assert served["error"] is None, served
    assert served["model_from_config"]["active_params"] == lookup_model("Qwen3-30B-A3B").active_params
    assert served["model_from_config"]["name"] == "acme/moe-small"
    assert list(tmp_path.glob("hf-configs/**/config.json"))  # cached in the data dir
    assert "acme/missing" in missing["error"]
    # No Hub reachable: the cached id still answers, an uncached one gets the offline message.
    assert cached["error"] is None and cached["model_from_config"]["params"] == served["model_from_config"]["params"]
    assert other["error"].startswith(f"hf_config: {OFFLINE_MESSAGE}")
