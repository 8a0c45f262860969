"""The page's front-end files from memory (``bot.surfaces.web.assets``): the same bytes as on disk in
every encoding, ETag revalidation, cache lifetimes by file name, nothing outside the folder."""

from __future__ import annotations

import gzip

import brotli
import pytest

from bot.surfaces.web import assets

JS = b"function hello(){return 'shardwise';}\n" * 200


@pytest.fixture()
def cache(tmp_path):
    folder = tmp_path / "assets"
    (folder / "sub").mkdir(parents=True)
    (folder / "index-DphvyggB.js").write_bytes(JS)
    (folder / "plain.css").write_bytes(b"body{color:#111}\n" * 100)
    (folder / "sub" / "font-AbCdEfGh.woff2").write_bytes(b"\x00\x01binary" * 50)
    (tmp_path / "secret.txt").write_text("not to be served")
    return assets.AssetCache(folder)


def test_each_encoding_gives_back_the_file(cache):
    asset = cache.get("index-DphvyggB.js")
    br = assets.respond(asset, "gzip, deflate, br", None)
    assert br.headers["content-encoding"] == "br" and brotli.decompress(br.body) == JS
    gz = assets.respond(asset, "gzip", None)
    assert gz.headers["content-encoding"] == "gzip" and gzip.decompress(gz.body) == JS
    raw = assets.respond(asset, "", None)
    assert "content-encoding" not in raw.headers and raw.body == JS
    assert raw.headers["content-type"].startswith(("application/javascript", "text/javascript"))
    assert br.headers["vary"] == "Accept-Encoding"


def test_hashed_names_are_immutable_others_revalidate(cache):
    assert cache.get("index-DphvyggB.js").cache_control == assets.IMMUTABLE
    assert cache.get("plain.css").cache_control == "no-cache"
    font = cache.get("sub/font-AbCdEfGh.woff2")
    assert font.br is None and font.gz is None  # already compressed formats are sent as they are


def test_a_matching_etag_gets_304(cache):
    asset = cache.get("plain.css")
    assert assets.respond(asset, "br", asset.etag).status_code == 304
    assert assets.respond(asset, "br", f'"other", {asset.etag}').status_code == 304
    assert assets.respond(asset, "br", '"other"').status_code == 200


@pytest.mark.parametrize("path", ["", "sub", "../secret.txt", "sub/../../secret.txt", "/etc/passwd", "missing.js"])
def test_nothing_outside_the_folder_or_missing(cache, path):
    assert cache.get(path) is None


def test_files_are_read_once(cache, monkeypatch):
    first = cache.get("plain.css")
    monkeypatch.setattr(assets, "load_asset", lambda full: pytest.fail("read again"))
    assert cache.get("plain.css") is first


def test_past_the_cap_files_are_served_not_kept(cache, monkeypatch):
    monkeypatch.setattr(assets, "MAX_CACHED_BYTES", 1000)
    assert cache.get("index-DphvyggB.js").raw == JS
    assert cache.cached("index-DphvyggB.js") is None


def test_the_route_serves_gradios_build_folder():
    route = assets.assets_route()
    assert route is not None and route.path == "/assets/{path:path}"
