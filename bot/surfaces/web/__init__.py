"""The chat page's parts (``bot.surfaces.webui`` builds the page from them): message and answer views,
the memory chart, the per-tab conversation queue and the shareable link."""
