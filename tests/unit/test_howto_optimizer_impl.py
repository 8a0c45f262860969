"""The how-to snippet's AdamW implementation is the one the figures assume (issue 26)."""

from __future__ import annotations

import pytest

from bot.howto import SnippetSpec, python_snippet


@pytest.mark.parametrize("strategy", ["fsdp_full_shard", "fsdp_shard_grad_op", "fsdp_hybrid_shard", "ddp"])
def test_default_snippet_uses_foreach_adamw_as_the_figures_do(strategy):
    code = python_snippet(SnippetSpec(strategy=strategy, nodes=2))
    assert "foreach=True" in code and "fused=True" not in code


@pytest.mark.parametrize("impl, expected", [("fused", "fused=True"), ("foreach", "foreach=True"),
                                            ("forloop", "foreach=False")])
def test_a_stated_implementation_is_what_the_snippet_builds(impl, expected):
    code = python_snippet(SnippetSpec(strategy="fsdp_full_shard", optimizer_impl=impl))
    assert expected in code


def test_the_bucket_view_variant_keeps_its_fused_adamw():
    code = python_snippet(SnippetSpec(strategy="ddp", bucket_view=True))
    assert "fused=True" in code and "gradient_as_bucket_view=True" in code
