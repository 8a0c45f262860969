"""The registry's calls for the web page (bot/tools.py, issue 27): the share link's framework,
the setup panel's catalog and config.json readers, the workers' reading and start-up. The page
modules reach nothing below the pipeline (tests/unit/test_architecture.py); these check that
what they call instead answers as the layers below do."""

from __future__ import annotations

import pytest

from bot import tools
from bot.surfaces.web.share import framework_from_query


@pytest.mark.parametrize("written", ["llamafactory", "LlamaFactory", "  LLAMAFACTORY "])
def test_a_known_framework_in_any_case(written):
    assert tools.known_framework(written) == "llamafactory"
    assert framework_from_query({"framework": written}) == "llamafactory"


@pytest.mark.parametrize("written", [None, "", "pytorch-lightning", "llamafactory; drop", "deepspeed"])
def test_an_unknown_framework_is_none(written):
    assert tools.known_framework(written) is None
    assert framework_from_query({} if written is None else {"framework": written}) is None
