"""The page's look and script: the CSS (colours chosen for WCAG AA contrast, the phone layout)
and PAGE_JS (scrolling to each new answer, the keyboard rules of the setup panel, the [n]
markers, ARIA fixes for Gradio's own markup)."""

from __future__ import annotations

from pathlib import Path


def plotly_chunk() -> str:
    """The file name of Gradio's Plotly chunk (``PlotlyPlot-<hash>.js``), '' if not found."""
    try:
        import gradio

        folder = Path(gradio.__file__).parent / "templates" / "frontend" / "assets"
        return next((f.name for f in sorted(folder.glob("PlotlyPlot-*.js"))), "")
    except Exception:  # noqa: BLE001  (only a speed-up)
        return ""

# Colours chosen for >= 4.5:1 contrast on white (WCAG AA): blue-700 button, gray-600 placeholder.
CSS = """
.sw-missing input, .sw-missing textarea {
  outline: 2px solid #b45309 !important; background: #fffbeb !important;
}
.sw-assumed input, .sw-assumed textarea {
  outline: 2px dashed #b45309 !important; background: #fff7ed !important;
}
.sw-missing label span, .sw-assumed label span, .sw-missing span[data-testid="block-info"],
.sw-assumed span[data-testid="block-info"] { color: #92400e !important; }
#sw-send, #sw-send.primary { background: #1d4ed8 !important; color: #fff !important; border-color: #1d4ed8 !important; }
#sw-send:hover { background: #1e40af !important; }
textarea::placeholder, input::placeholder { color: #4b5563 !important; opacity: 1 !important; }
.sw-sources { margin-top: 0.6em; font-size: 0.92em; }
.sw-sources details { border-left: 3px solid #94a3b8; padding: 0.1em 0.6em; margin: 0.25em 0; }
.sw-more { border: 1px solid #cbd5e1; border-radius: 6px; padding: 0.2em 0.6em; margin: 0.4em 0; }
.sw-more > summary, .sw-sources summary { cursor: pointer; font-weight: 600; }
.sw-sources blockquote { margin: 0.3em 0; color: #334155; }
.sw-kind { font-size: 0.8em; padding: 0 0.4em; border-radius: 4px; background: #e2e8f0; color: #1e293b; }
.sw-headline { font-size: 1.08em; font-weight: 700; }
.sw-answer h3.sw-h { font-size: 1em; font-weight: 700; margin: 0.6em 0 0.2em 0; }
.sw-answer table { font-size: 0.92em; }
.sw-chip { display: inline-block; border: 1px dashed #b45309; background: #fff7ed; color: #7c2d12;
  border-radius: 4px; padding: 0 0.35em; margin: 0.1em 0.2em 0.1em 0; font-size: 0.92em; }
.sw-assumed-line, .sw-carried-line { margin: 0.3em 0 0.5em 0; }
.sw-carried input, .sw-carried textarea { outline: 2px dotted #1d4ed8 !important; background: #eff6ff !important; }
.sw-carried label span, .sw-carried span[data-testid="block-info"] { color: #1e3a8a !important; }
.sw-chip.sw-carried-chip { border: 1px dotted #1d4ed8; background: #eff6ff; color: #1e3a8a; }
.sw-assumed-options { display: inline; }
.sw-assumed-options > summary { display: inline; cursor: pointer; font-size: 0.92em; color: #7c2d12; }
.sw-notice { color: #7c2d12; }
.sw-user .sw-note { display: block; font-size: 0.85em; color: #374151; }
.sw-answer table td, .sw-answer table th { padding: 0.15em 0.5em; white-space: nowrap; }
.sw-answer .sw-scroll { overflow-x: auto; max-width: 100%; }
/* A wide table scrolls inside its box; the strategy column stays in view while it does. */
.sw-answer .sw-scroll table tr > :first-child { position: sticky; left: 0; background: #fff; z-index: 1; }
.sw-answer .sw-scroll table tr.sw-chosen > :first-child { background: #eff6ff; }
/* Chinese text with Chinese (not Japanese) glyphs wherever it is tagged zh-CN. */
:lang(zh-CN) { font-family: "Noto Sans CJK SC", "Noto Sans SC", "Source Han Sans SC", "PingFang SC",
  "Microsoft YaHei", "WenQuanYi Zen Hei", sans-serif; }
textarea::placeholder, input::placeholder { font-style: italic; }
#sw-msg textarea.sw-long { height: 12em !important; overflow-y: scroll !important; }
.sw-table tr.sw-chosen td { font-weight: 700; }
#sw-chat code, #sw-chat pre, #sw-howto-code code, #sw-howto-code pre { color: #111827 !important; }
#sw-chat pre .token, #sw-howto-code pre .token { color: #111827 !important; }
#sw-chat pre .token.keyword, #sw-howto-code pre .token.keyword { color: #1d4ed8 !important; }
#sw-chat pre .token.string, #sw-howto-code pre .token.string { color: #166534 !important; }
#sw-chat pre .token.comment, #sw-howto-code pre .token.comment { color: #4b5563 !important; }
#sw-missing-note, #sw-hint, #sw-sim-note, #sw-chart-note, #sw-share { min-height: 0; }
#sw-hint p { color: #92400e; margin: 0; }
#sw-chart-note p { font-size: 0.9em; color: #374151; margin: 0.2em 0; }
.sw-narrow { display: none; }
#sw-intro h1 { font-size: 1.5em !important; margin: 0.3em 0 !important; }
footer .show-api, footer a, footer button { color: #374151 !important; }
@media (max-width: 760px) {
  .sw-wide { display: none; }
  .sw-narrow { display: inline; }
  #sw-intro h1 { font-size: 1.2em !important; margin: 0.2em 0 !important; }
  #sw-intro p { font-size: 0.92em; margin: 0.2em 0; }
  #sw-chat { height: calc(100svh - 300px) !important; min-height: 300px; }
}
"""


# The page's script: scroll to the start of each new answer (headline and table in view, not the
# bottom of a long answer), to the bottom when the user's own message appears, and keep the
# address bar's link in step with the answer shown.
PAGE_JS = """
() => {
  const seen = new Set();
  const scroller = (el) => {
    for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
      const s = getComputedStyle(p);
      if ((s.overflowY === 'auto' || s.overflowY === 'scroll') && p.scrollHeight > p.clientHeight) return p;
    }
    return null;
  };
  const show = (el, atBottom) => {
    const box = scroller(el);
    const target = el.closest('.message') || el;
    if (box) {
      if (atBottom) { box.scrollTop = box.scrollHeight; }
      else { box.scrollTop += target.getBoundingClientRect().top - box.getBoundingClientRect().top - 12; }
    }
    const r = target.getBoundingClientRect();
    if (!atBottom && (r.top < 0 || r.top > window.innerHeight - 80)) target.scrollIntoView({block: 'start'});
  };
  const check = () => {
    const chat = document.querySelector('#sw-chat');
    if (!chat) return;
    let answer = null, asked = null;
    chat.querySelectorAll('.sw-answer, .sw-user').forEach((el) => {
      const m = el.className.match(/sw-([aq])-(x\\d+)/);
      if (!m || seen.has(m[1] + m[2])) return;
      seen.add(m[1] + m[2]);
      if (m[1] === 'a') answer = el; else asked = el;
    });
    if (answer) show(answer, false); else if (asked) show(asked, true);
  };
  // Two ARIA faults in Gradio's own markup (axe-core: critical and serious): the examples box
  // says role=list but holds buttons, and the empty chart box has a label but no role.
  const fixAria = () => {
    document.querySelectorAll('.examples[role="list"]').forEach((el) => {
      el.setAttribute('role', 'group'); el.setAttribute('aria-label', 'Example questions');
    });
    document.querySelectorAll('.empty[aria-label]:not([role])').forEach((el) => el.setAttribute('role', 'img'));
    // Code that scrolls sideways must be reachable by keyboard (Tab, then the arrow keys).
    document.querySelectorAll('pre:not([tabindex])').forEach((el) => el.setAttribute('tabindex', '0'));
  };
  fixAria();
  // A long paste (a 50 KB log): Gradio sizes the message box to its text on every input by
  // setting its height to 1px and reading it back, a layout of the whole text each time (5 s
  // for 50 KB). A long text gets a fixed height instead (CSS .sw-long), set before Gradio looks.
  document.addEventListener('input', (e) => {
    const box = e.target;
    if (box.matches && box.matches('#sw-msg textarea')) box.classList.toggle('sw-long', box.value.length > 4000);
  }, true);
  // Plotly (3.5 MB) is compiled the first time a chart arrives: a ~1-2 s main-thread freeze in
  // the middle of the first answer. Loaded here when the browser is idle, the first answer's
  // chart draws without it (the same URL, so Gradio's own import then finds it loaded).
  // Plotly's first drawing also sets itself up (its styles, the bar module, text measuring for
  // the page's fonts): a small chart drawn out of sight, in a later idle moment, pays for that,
  // so the first answer's chart costs what any later one does.
  const chunk = '__PLOTLY_CHUNK__';
  const idle = window.requestIdleCallback || ((f) => setTimeout(f, 1500));
  const warm = () => {
    const P = window.Plotly;
    if (!P || document.querySelector('#sw-chart .js-plotly-plot')) return;
    const box = document.createElement('div');
    box.setAttribute('aria-hidden', 'true');
    box.style.cssText = 'position:fixed;left:-9999px;top:0;width:420px;height:260px;visibility:hidden';
    document.body.appendChild(box);
    P.newPlot(box, [{type: 'bar', orientation: 'h', x: [1], y: ['a<br>1 GiB'], name: 'a'},
                    {type: 'scatter', mode: 'lines', x: [1, 1], y: ['a<br>1 GiB', 'a<br>1 GiB'], name: 'b'}],
              {barmode: 'stack', font: {size: 13, family: 'Noto Sans CJK SC, DejaVu Sans, sans-serif'},
               legend: {orientation: 'h'}, title: {text: '★'}}, {responsive: false})
      .then(() => { P.purge(box); box.remove(); }, () => box.remove());
  };
  const preload = () => {
    const index = performance.getEntriesByType('resource').map((e) => e.name)
      .find((n) => n.includes('/assets/index-') && n.endsWith('.js'));
    if (chunk && index) import(index.replace(/[^/]+$/, chunk)).then(() => idle(warm, {timeout: 4000}), () => {});
  };
  idle(preload, {timeout: 4000});
  new MutationObserver(() => requestAnimationFrame(() => { fixAria(); check(); }))
    .observe(document.body, {childList: true, subtree: true});
  window.__swSeen = seen;

  // Panel dropdowns (Gradio's): leaving one by Tab fired its "input" event though nothing was
  // chosen (one re-answer request per dropdown on a Tab pass), left its option list open (lists
  // piled up) and Tab stepped into the list, which then vanished, dropping focus on the page.
  // A blur of a dropdown the user did not touch (no key but Tab, no click in its list) is
  // stopped before Gradio sees it and the list closed; Tab skips the option lists.
  const isDropdown = (el) => el && el.matches && el.matches('#sw-setup input[role="combobox"]');
  const touched = new WeakMap();
  let back = false;
  const tabbable = () => [...document.querySelectorAll(
      'input:not([type=hidden]), textarea, button, select, a[href], [tabindex]:not([tabindex="-1"])')]
    .filter((el) => !el.closest('.option-list') && !el.disabled && el.offsetParent !== null);
  document.addEventListener('keydown', (e) => {
    if (e.key === 'Tab') back = e.shiftKey;
    else if (isDropdown(e.target) && !['Shift', 'Escape'].includes(e.key)) touched.set(e.target, true);
  }, true);
  document.addEventListener('pointerdown', (e) => {
    const block = e.target.closest && e.target.closest('#sw-setup .block');
    const input = block && block.querySelector('input[role="combobox"]');
    if (input) touched.set(input, true);
  }, true);
  document.addEventListener('focusin', (e) => {
    if (isDropdown(e.target)) { touched.set(e.target, false); return; }
    const list = e.target.closest && e.target.closest('#sw-setup .option-list');
    if (!list) return;
    const block = list.closest('.block');
    const all = tabbable();
    const after = all.filter((el) => block.compareDocumentPosition(el) & Node.DOCUMENT_POSITION_FOLLOWING && !block.contains(el));
    const before = all.filter((el) => block.compareDocumentPosition(el) & Node.DOCUMENT_POSITION_PRECEDING);
    const next = back ? before[before.length - 1] : after[0];
    if (next) next.focus();
  }, true);
  // A [n] marker opens its source entry (and the folded sources around it) in the same answer.
  document.addEventListener('click', (e) => {
    const ref = e.target.closest && e.target.closest('a.sw-ref');
    if (!ref) return;
    const n = (ref.className.match(/sw-ref-(\\d+)/) || [])[1];
    const answer = ref.closest('.sw-answer');
    const entry = n && answer && answer.querySelector('.sw-src-' + n);
    if (!entry) return;
    e.preventDefault();
    for (let d = entry; d; d = d.parentElement && d.parentElement.closest('details')) d.open = true;
    entry.scrollIntoView({block: 'nearest'});
    const summary = entry.querySelector('summary');
    if (summary) summary.focus();
  }, true);
  document.addEventListener('blur', (e) => {
    const input = e.target;
    if (!isDropdown(input) || touched.get(input) !== false) return;
    e.stopImmediatePropagation();
    input.dispatchEvent(new KeyboardEvent('keydown', {key: 'Escape', code: 'Escape', bubbles: true}));
  }, true);
}
"""


PAGE_JS = PAGE_JS.replace("__PLOTLY_CHUNK__", plotly_chunk())
