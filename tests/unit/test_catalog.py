"""The model and accelerator catalogs (bot/catalog/): counts against published figures and against
the real transformers modules, Hugging Face configs from every source, names people type, cards."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from bot.catalog import (
    GPUSpec,
    UnknownNameError,
    custom_gpu,
    gpu_names,
    list_gpus,
    list_models,
    lookup_gpu,
    lookup_model,
    model_names,
)
from bot.catalog.hf_config import (
    OFFLINE_MESSAGE,
    ConfigError,
    hf_config_for,
    load_hf_config,
    model_from_hf_config,
)
from bot.catalog.models import _norm
from tests.netutil import NO_HUB_RETRIES

MODELLED = [m for m in list_models() if m.declared_params is None]


# --- parameter counts ---------------------------------------------------------------------------


@pytest.mark.parametrize("spec", [m for m in list_models() if m.published_params_b], ids=lambda m: m.name)
def test_every_catalog_model_matches_its_published_count_within_half_a_percent(spec):
    assert spec.source_url.startswith("https://"), spec.name
    assert abs(spec.params_b - spec.published_params_b) / spec.published_params_b <= 0.005, (
        f"{spec.name}: {spec.params_b:.4f}B vs published {spec.published_params_b}B")


@pytest.mark.parametrize("spec", [m for m in list_models() if m.is_moe], ids=lambda m: m.name)
def test_moe_active_parameters_match_the_published_activated_count(spec):
    assert spec.kind == "moe" and spec.active_params < spec.params
    active = spec.active_params
    if spec.family.startswith("deepseek"):  # DeepSeek (and Kimi, its architecture): "activated" leaves the input embedding out
        active -= spec.vocab * spec.hidden
    # Publishers round activated counts down ("3B", "2.7B"): within 2.5 %.
    assert abs(active / 1e9 - spec.published_active_b) / spec.published_active_b <= 0.025, spec.name


def test_dense_models_have_active_equal_to_total():
    for spec in list_models():
        if not spec.is_moe:
            assert spec.active_params == spec.params and spec.active_params_b == spec.params_b


def test_exact_counts_hugging_face_reports():
    # Counts printed by transformers' num_parameters() for these checkpoints.
    assert lookup_model("llama2-7b").params == 6_738_415_616
    assert lookup_model("Llama-3.1-8B").params == 8_030_261_248
    assert lookup_model("bert-base-uncased").params == 109_482_240
    assert lookup_model("t5-base").params == 222_903_552
    assert lookup_model("Mixtral-8x7B").params == 46_702_792_704


def _count_with_transformers(config: dict) -> int:
    import torch
    import transformers

    from bot.bench.hf_model import ENCODER_TYPES, SEQ2SEQ_TYPES, transformers_config

    model_type, conf = transformers_config(config)
    with torch.device("meta"):
        if model_type in ENCODER_TYPES:
            model = transformers.AutoModel.from_config(conf)  # the published count: with pooler, no MLM head
        elif model_type in SEQ2SEQ_TYPES:
            model = transformers.AutoModelForSeq2SeqLM.from_config(conf)
        elif model_type == "gemma3":
            model = transformers.AutoModelForImageTextToText.from_config(conf)
        else:
            model = transformers.AutoModelForCausalLM.from_config(conf)
    return sum(p.numel() for p in model.parameters())  # tied weights counted once


@pytest.mark.parametrize("spec", MODELLED, ids=lambda m: m.name)
def test_our_count_equals_the_transformers_model_built_from_the_config(spec):
    expected = spec.params
    if spec.kind == "encoder_decoder" and not spec.tied_embeddings:
        # transformers 5 ties T5's LM head to the shared embedding whatever the config says
        # (configuration_t5.py: "we tie weights always and force it to be True"); the T5 v1.1 /
        # Flan-T5 / mT5 checkpoints store a separate head, which the published counts include.
        expected -= spec.vocab * spec.hidden
    assert _count_with_transformers(hf_config_for(spec)) == expected


@pytest.mark.parametrize("spec", MODELLED, ids=lambda m: m.name)
def test_config_round_trip_keeps_the_count(spec):
    again = model_from_hf_config(hf_config_for(spec))
    assert (again.params, again.active_params, again.kind) == (spec.params, spec.active_params, spec.kind)


@pytest.mark.parametrize("name", ["Llama-3.2-1B", "Qwen3-30B-A3B", "DeepSeek-V2-Lite", "GPT-2", "T5-base",
                                  "BERT-base", "Gemma-2-2B", "Mixtral-8x7B", "Qwen1.5-MoE-A2.7B"])
def test_a_config_json_as_transformers_writes_it_reads_back(name, tmp_path):
    from bot.bench.hf_model import transformers_config

    spec = lookup_model(name)
    _, conf = transformers_config(hf_config_for(spec))
    (tmp_path / "config.json").write_text(conf.to_json_string())  # what save_pretrained writes
    assert model_from_hf_config(tmp_path).params == spec.params  # a folder
    assert model_from_hf_config(str(tmp_path / "config.json")).params == spec.params  # a file
    assert model_from_hf_config(conf.to_json_string()).params == spec.params  # pasted JSON


def test_every_entry_has_a_source_and_a_published_count():
    for spec in list_models():
        if spec.name == "tiny":  # the test model: its shape is ours
            continue
        assert spec.source_url.startswith("https://"), spec.name
        assert spec.published_params_b and spec.published_params_b > 0, spec.name
        if spec.declared_params is not None:  # params-only: marked, and the count is the publisher's
            assert spec.approximate and spec.params == round(spec.published_params_b * 1e9), spec.name


def test_the_catalog_covers_what_people_fine_tune_and_ask_about():
    # issue 24's list: each family resolves to an entry (a name as people write it)
    wanted = [
        "chatglm-6b-v1", "chatglm2-6b", "chatglm3-6b", "glm-4-9b-chat", "glm-4-32b-0414", "internlm-7b",
        "internlm2-chat-7b", "internlm3-8b-instruct", "InternVL2-8B", "InternVL2.5-8B", "InternVL3-8B",
        "MiniCPM-2B", "MiniCPM-V-2_6", "MiniCPM-Llama3-V-2_5", "Yi-34B", "Yi-1.5-9B", "Baichuan2-13B-Chat",
        "baichuan-7b", "deepseek-llm-7b-chat", "DeepSeek-V2", "DeepSeek-V3", "DeepSeek-R1-Distill-Qwen-7B",
        "DeepSeek-R1-Distill-Llama-8B", "deepseek-coder-6.7b-instruct", "Qwen-14B-Chat", "Qwen1.5-72B-Chat",
        "Qwen2-72B-Instruct", "Qwen2.5-7B", "Qwen3-8B", "Qwen2.5-VL-7B-Instruct", "Qwen2-VL-2B-Instruct",
        "Qwen2.5-Coder-32B-Instruct", "Qwen2.5-Math-7B-Instruct", "Aquila-7B", "Ziya-LLaMA-13B-v1",
        "llava-1.5-7b", "llava-v1.6-34b", "idefics2-8b", "Aria", "Pixtral-12B", "Molmo-7B-D", "starcoder",
        "starcoder2-15b", "CodeLlama-13b-Instruct", "mpt-7b", "mpt-30b", "falcon-7b", "falcon-40b", "pythia-6.9b",
        "gpt-neox-20b", "opt-1.3b", "opt-13b", "bloom-7b1", "t5-base", "flan-t5-xl", "mt5-base", "bert-base-uncased",
        "xlm-roberta-large", "bge-m3", "resnet50", "vit-base-patch16-224", "convnext-tiny", "openai/clip-vit-large-patch14",
        "sdxl", "stable diffusion 1.5", "sd 2.1",
    ]
    missing = []
    for name in wanted:
        try:
            lookup_model(name)
        except UnknownNameError:
            missing.append(name)
    assert not missing, missing
    assert len([m for m in list_models() if m.name != "tiny"]) >= 300


def test_the_entries_are_data_and_the_module_stays_small():
    from pathlib import Path

    import bot.catalog.models as models

    assert len(Path(models.__file__).read_text(encoding="utf-8").splitlines()) < 700
    raw = json.loads((Path(models.__file__).parent / "models.json").read_text(encoding="utf-8"))
    assert len(raw["models"]) == len(list_models())
    with pytest.raises(ValueError, match="unknown keys"):  # a misspelt field is refused, not ignored
        models._entry({"name": "x", "shape": [1, 8, 8, 1, 1, 8], "publihsed": 1.0}, {})


def test_docs_catalog_lists_every_entry_and_the_count():
    import re
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "catalog.md").read_text(encoding="utf-8")
    section = doc.split("## Built-in models", 1)[1].split("\n## ", 1)[0]
    models = [m for m in list_models() if m.name != "tiny"]
    assert int(re.search(r"^(\d+) models:", section.strip()).group(1)) == len(models)
    missing = [m.name for m in models if f"| {m.name} |" not in section]
    assert not missing, missing


def test_approximate_entries_are_marked_and_keep_their_published_count():
    flux = lookup_model("FLUX.1-dev")
    assert flux.approximate and flux.kind == "diffusion" and flux.params == 11_900_000_000
    vlm = lookup_model("Qwen/Qwen2-VL-7B-Instruct")
    assert vlm.approximate and vlm.kind == "vlm"
    with pytest.raises(ConfigError):
        hf_config_for(flux)


# --- configs: bad input ---------------------------------------------------------------------------


@pytest.mark.parametrize("text,message", [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "not an object"),
    ('{"model_type": "llama"}', "no hidden_size"),
    ('{"model_type": "unet", "block_out_channels": [320]}', "cannot read"),
    ('{"model_type": "llama", "hidden_size": -5, "num_hidden_layers": 2, "num_attention_heads": 2,'
     ' "vocab_size": 10}', "not a plausible"),
    ("", "empty config"),
    ("definitely not a model", "neither"),
    ("/no/such/config.json", "no file"),
])
def test_bad_configs_get_a_clear_message(text, message):
    with pytest.raises(ConfigError) as err:
        model_from_hf_config(text)
    assert message in str(err.value)


def test_a_huge_paste_is_refused():
    with pytest.raises(ConfigError, match="a few KB"):
        model_from_hf_config("{" + " " * 3_000_000 + "}")


def test_an_unknown_model_type_with_llama_keys_is_read_with_a_note():
    spec = model_from_hf_config({"model_type": "newthing", "hidden_size": 512, "num_hidden_layers": 4,
                                 "num_attention_heads": 8, "intermediate_size": 1024, "vocab_size": 1000})
    assert spec.params > 0 and "not one we know" in spec.notes


def test_dense_layers_of_a_moe_config_are_counted():
    cfg = hf_config_for("Qwen3-30B-A3B")
    cfg.update(mlp_only_layers=[0, 1])
    spec = model_from_hf_config(cfg)
    assert spec.first_k_dense == 2 and spec.params < lookup_model("Qwen3-30B-A3B").params


# --- the Hub: offline message, and a fake Hub endpoint on 127.0.0.1 --------------------------------


def test_a_hub_id_offline_says_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setenv("SHARDWISE_DATA_DIR", str(tmp_path))
    from huggingface_hub import constants

    assert constants.is_offline_mode()  # bot.env sets HF_HUB_OFFLINE=1 for the test process
    with pytest.raises(ConfigError) as err:
        model_from_hf_config("meta-llama/Llama-3.1-8B")
    assert str(err.value) == OFFLINE_MESSAGE


class _FakeHub(BaseHTTPRequestHandler):
    """Answers /{repo}/resolve/{revision}/config.json the way the Hub does (headers included)."""

    configs: dict[str, bytes] = {}
    requests: list[str] = []

    def _answer(self, body: bool) -> None:
        self.requests.append(f"{self.command} {self.path}")
        parts = self.path.split("?")[0].strip("/").split("/")
        repo = "/".join(parts[:2])
        if len(parts) >= 5 and parts[2] == "resolve" and repo in self.configs and parts[-1] == "config.json":
            data = self.configs[repo]
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("ETag", '"fake-etag-1"')
            self.send_header("X-Repo-Commit", "0123456789abcdef0123456789abcdef01234567")
            self.end_headers()
            if body:
                self.wfile.write(data)
            return
        code = "RepoNotFound" if repo not in self.configs else "EntryNotFound"
        self.send_response(404 if code == "EntryNotFound" else 401)
        self.send_header("X-Error-Code", code)
        self.send_header("X-Error-Message", "not here")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_HEAD(self):  # noqa: N802
        self._answer(body=False)

    def do_GET(self):  # noqa: N802
        self._answer(body=True)

    def log_message(self, *args):
        pass


def _fetch_in_child(repo: str, endpoint: str, data_dir: str, offline: str) -> subprocess.CompletedProcess:
    # huggingface_hub reads HF_HUB_OFFLINE when imported: a child process gets its own setting.
    code = (NO_HUB_RETRIES + "import json,sys\nfrom bot.catalog.hf_config import model_from_hf_config, ConfigError\n"
            f"try:\n    s = model_from_hf_config({repo!r})\n    print(json.dumps([s.name, s.params]))\n"
            "except ConfigError as e:\n    print(json.dumps(['error', str(e)]))\n")
    env = {**os.environ, "HF_HUB_OFFLINE": offline, "TRANSFORMERS_OFFLINE": offline, "HF_ENDPOINT": endpoint,
           "SHARDWISE_DATA_DIR": data_dir}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.slow
def test_a_hub_id_is_fetched_config_only_from_the_endpoint_and_cached(tmp_path):
    _FakeHub.configs = {"acme/tiny-llama": json.dumps(hf_config_for("Llama-3.2-1B")).encode()}
    _FakeHub.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeHub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        out = _fetch_in_child("acme/tiny-llama", endpoint, str(tmp_path), "0")
        name, params = json.loads(out.stdout.strip().splitlines()[-1])
        assert params == lookup_model("Llama-3.2-1B").params, out.stderr[-2000:]
        assert all("config.json" in r for r in _FakeHub.requests)  # config only, never weights
        assert list(tmp_path.glob("hf-configs/**/config.json"))  # cached in the data dir
        # Offline afterwards: served from the cache, no request.
        before = len(_FakeHub.requests)
        out = _fetch_in_child("acme/tiny-llama", endpoint, str(tmp_path), "1")
        assert json.loads(out.stdout.strip().splitlines()[-1])[1] == params
        assert len(_FakeHub.requests) == before
        # A repo the Hub does not have.
        out = _fetch_in_child("acme/missing", endpoint, str(tmp_path), "0")
        kind, message = json.loads(out.stdout.strip().splitlines()[-1])
        assert kind == "error" and "acme/missing" in message
    finally:
        server.shutdown()


@pytest.mark.slow
def test_an_unreachable_hub_gives_the_offline_message(tmp_path):
    from bot.env import free_port

    out = _fetch_in_child("acme/tiny-llama", f"http://127.0.0.1:{free_port()}", str(tmp_path), "0")
    kind, message = json.loads(out.stdout.strip().splitlines()[-1])
    assert kind == "error" and message.startswith(OFFLINE_MESSAGE)


# --- names people type ------------------------------------------------------------------------------


@pytest.mark.parametrize("typed,name", [
    ("qwen2-7b", "Qwen2.5-7B"), ("llama3 8b instruct", "Llama-3.1-8B"), ("Meta-Llama-3-8B-Instruct", "Llama-3.1-8B"),
    ("Qwen/Qwen2.5-7B-Instruct", "Qwen2.5-7B"), ("meta-llama/Llama-3.2-1B-Instruct", "Llama-3.2-1B"),
    ("mixtral 8x7b", "Mixtral-8x7B"), ("Mixtral-8x7B-Instruct-v0.1", "Mixtral-8x7B"), ("Qwen3-32B", "Qwen3-32B"),
    ("Qwen/Qwen3-30B-A3B", "Qwen3-30B-A3B"), ("Qwen1.5-14B-Chat", "Qwen1.5-14B"), ("Baichuan2-13B-Chat", "Baichuan2-13B"),
    ("bert-base-uncased", "BERT-base"), ("MPT-7B", "MPT-7B"), ("google/gemma-2-9b-it", "Gemma-2-9B"),
    ("deepseek-ai/DeepSeek-V2-Lite-Chat", "DeepSeek-V2-Lite"), ("Llama-3.3-70B-Instruct", "Llama-3.3-70B"),
    ("microsoft/phi-4", "Phi-4"), ("THUDM/glm-4-9b-chat", "GLM-4-9B"), ("01-ai/Yi-34B", "Yi-34B"),
    ("google-t5/t5-large", "T5-large"), ("gpt2-xl", "GPT-2 XL"), ("mistral nemo", "Mistral-Nemo-12B"),
])
def test_model_names_as_people_write_them(typed, name):
    assert lookup_model(typed).name == name


def test_no_alias_points_at_two_models():
    seen: dict[str, str] = {}
    for spec in list_models():
        for key in (spec.name, *spec.aliases):
            assert seen.setdefault(_norm(key), spec.name) == spec.name, key
    assert model_names()["qwen2-7b"] == "Qwen2.5-7B"


def test_an_unknown_model_suggests_names_and_the_config_route():
    with pytest.raises(UnknownNameError) as err:
        lookup_model("qwen3-33b")
    assert "Qwen3-32B" in err.value.suggestions and "config.json" in str(err.value)


# --- accelerators --------------------------------------------------------------------------------------

# Memory from each card's spec sheet (GB as marketed); the catalog's source_url is that sheet.
SPEC_SHEET_MEMORY = {
    "P100 16GB SXM2": 16, "P100 16GB PCIe": 16, "T4 16GB": 16, "V100 16GB SXM2": 16, "V100 32GB SXM2": 32, "A10 24GB": 24, "A10G 24GB": 24, "A40 48GB": 48,
    "RTX A6000 48GB": 48, "L4 24GB": 24, "L40S 48GB": 48, "RTX 3080 10GB": 10, "RTX 3090 24GB": 24,
    "RTX 4090 24GB": 24, "RTX 5090 32GB": 32, "A100 40GB SXM": 40, "A100 40GB PCIe": 40, "A100 80GB SXM": 80,
    "A100 80GB PCIe": 80, "A800 80GB SXM": 80, "A800 80GB PCIe": 80, "H100 80GB PCIe": 80, "H100 80GB SXM": 80,
    "H100 NVL 94GB": 94, "H800 80GB SXM": 80, "H20 96GB": 96, "H200 141GB SXM": 141, "B200 180GB": 180,
    "MI250X 64GB (one GCD)": 64, "MI300X 192GB": 192, "Gaudi 2 96GB": 96, "Gaudi 3 128GB": 128,
    "Ascend 910B 64GB": 64, "P40 24GB": 24, "RTX 3090 Ti 24GB": 24,
    "RTX 2080 Ti 11GB": 11, "RTX 3060 12GB": 12, "RTX 3080 12GB": 12, "RTX 4060 Ti 16GB": 16, "RTX 4080 16GB": 16,
    "RTX 5070 12GB": 12, "RTX 5070 Ti 16GB": 16, "RTX 5080 16GB": 16, "A30 24GB": 24, "L40 48GB": 48,
    "RTX 6000 Ada 48GB": 48, "RTX 5880 Ada 48GB": 48, "RTX 5000 Ada 32GB": 32, "RTX 4500 Ada 24GB": 24,
    "RTX 4000 Ada 20GB": 20, "RTX A5000 24GB": 24, "RTX A4000 16GB": 16, "RTX PRO 6000 Blackwell 96GB": 96,
    # Pascal GeForce and TITANs, Volta/Turing TITANs, Quadro RTX, more RTX A-series (TechPowerUp / NVIDIA pages)
    "GTX 1080 Ti 11GB": 11, "GTX 1080 8GB": 8, "GTX 1070 Ti 8GB": 8, "GTX 1070 8GB": 8, "GTX 1060 6GB": 6,
    "GTX 1060 3GB": 3, "GTX 1050 Ti 4GB": 4, "GTX 1050 2GB": 2, "TITAN X Pascal 12GB": 12, "TITAN Xp 12GB": 12,
    "TITAN V 12GB": 12, "TITAN RTX 24GB": 24, "Quadro RTX 8000 48GB": 48, "Quadro RTX 6000 24GB": 24,
    "Quadro RTX 5000 16GB": 16, "Quadro RTX 4000 8GB": 8, "RTX A5500 24GB": 24, "RTX A4500 20GB": 20,
    "RTX A2000 12GB": 12, "RTX A2000 6GB": 6,
    "Quadro P6000 24GB": 24, "Quadro P5000 16GB": 16, "Quadro GV100 32GB": 32,
    "L20 48GB": 48, "GB200 186GB": 186, "MI325X 256GB": 256, "MI210 64GB": 64,
}


def test_every_card_has_its_spec_sheet_memory_and_figures():
    cards = {g.name: g for g in list_gpus()}
    assert set(cards) == set(SPEC_SHEET_MEMORY)
    for name, memory in SPEC_SHEET_MEMORY.items():
        card = cards[name]
        assert card.memory_gb == memory, name
        assert card.source_url.startswith("https://"), name
        assert card.bf16_tflops > 0 and card.hbm_tb_s > 0 and card.intra_link_gb_s > 0
        assert card.intra_link in ("nvlink", "pcie")


def test_backends_and_bf16():
    for card in list_gpus():
        expected = "hccl" if card.vendor in ("huawei", "intel") else "nccl"
        assert card.backend == expected, card.name
        assert card.default_precision == ("bf16-mixed" if card.supports_bf16 else "fp16-mixed")
    assert not lookup_gpu("V100").supports_bf16 and not lookup_gpu("T4").supports_bf16
    assert lookup_gpu("910B").device_type == "npu" and lookup_gpu("gaudi2").device_type == "hpu"
    assert lookup_gpu("MI300X").device_type == "cuda"  # ROCm builds use the cuda device API


def test_geforce_40_series_defaults_to_pcie_without_p2p():
    card = lookup_gpu("4090")
    assert card.intra_link == "pcie" and "no" in card.intra_link_name.lower()


@pytest.mark.parametrize("typed,name", [
    ("A100-40G", "A100 40GB SXM"), ("A800-SXM4-80GB", "A800 80GB SXM"), ("H100-80G", "H100 80GB SXM"),
    ("910B", "Ascend 910B 64GB"), ("昇腾910B", "Ascend 910B 64GB"), ("Ascend 910B", "Ascend 910B 64GB"),
    ("A6000", "RTX A6000 48GB"), ("4090", "RTX 4090 24GB"), ("RTX 3080", "RTX 3080 10GB"), ("A40", "A40 48GB"),
    ("T4", "T4 16GB"), ("Tesla T4", "T4 16GB"), ("P100", "P100 16GB SXM2"), ("Tesla P100 PCIe", "P100 16GB PCIe"), ("H20", "H20 96GB"), ("H100 NVL 96GB", "H100 NVL 94GB"),
    ("H100 NVL", "H100 NVL 94GB"), ("MI300X", "MI300X 192GB"), ("AMD MI250X", "MI250X 64GB (one GCD)"),
    ("Gaudi2", "Gaudi 2 96GB"), ("Intel Gaudi 3", "Gaudi 3 128GB"), ("L4", "L4 24GB"), ("A10G", "A10G 24GB"),
    ("RTX 5090", "RTX 5090 32GB"), ("B200", "B200 180GB"), ("H200", "H200 141GB SXM"), ("V100 16GB", "V100 16GB SXM2"),
    ("L40S", "L40S 48GB"), ("NVIDIA A100 80GB PCIe", "A100 80GB PCIe"), ("3090", "RTX 3090 24GB"),
    ("Tesla P40", "P40 24GB"), ("P40", "P40 24GB"), ("3090ti", "RTX 3090 Ti 24GB"), ("RTX 3090 Ti", "RTX 3090 Ti 24GB"),
])
def test_card_names_as_people_write_them(typed, name):
    assert lookup_gpu(typed).name == name


def test_every_card_alias_is_listed_for_the_parser():
    names = gpu_names()
    for card in list_gpus():
        for alias in card.aliases:
            assert names[alias] == card.name


def test_a_card_the_catalog_lacks_is_accepted_by_its_memory_and_marked():
    card = custom_gpu(48, "Moore Threads S4000")
    assert isinstance(card, GPUSpec) and card.approximate and card.memory_gb == 48
    assert "not in catalog" in card.name and "placeholder" in card.notes
    with pytest.raises(ValueError):
        custom_gpu(0)
    with pytest.raises(UnknownNameError):
        lookup_gpu("Moore Threads S4000")


def test_load_hf_config_reports_where_a_hub_config_came_from(monkeypatch):
    from bot.catalog import hf_config

    monkeypatch.setattr(hf_config, "fetch_hub_config", lambda repo_id: {"model_type": "gpt2"})
    data, where = load_hf_config("openai-community/gpt2")
    assert data == {"model_type": "gpt2"} and where.startswith("https://huggingface.co/openai-community/gpt2")


def test_caveats_tell_answers_what_the_numbers_leave_out():
    from bot.catalog import EXPERT_PARALLEL_NOTE

    assert EXPERT_PARALLEL_NOTE in lookup_model("Mixtral-8x7B").caveats
    assert "all-to-all" in EXPERT_PARALLEL_NOTE
    assert any("published parameter count" in c for c in lookup_model("sdxl").caveats)
    assert any("vision tower" in c for c in lookup_model("Gemma-3-4B").caveats)
    assert lookup_model("Llama-3.1-8B").caveats == ()
