/* The content owners' page: refusals grouped by similar questions, answers marked wrong, one trace, exports.
 *
 * Reads GET /admin/api/summary, /admin/api/traces/{id} and /admin/api/export with the key kept
 * in localStorage (the question page's key). Everything is drawn with text nodes: questions and
 * notes come from readers and are never parsed as HTML. `/admin#trace=<id>` opens one trace.
 */
"use strict";

(() => {
  const KEY_STORAGE = "rag.apiKey";
  const $ = (id) => document.getElementById(id);
  const REASONS = {
    low_retrieval_score: "Not in the knowledge base",
    conflicting_sources: "Sources disagree",
    no_citations: "Found, not answered",
  };

  function h(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (name === "class") node.className = value;
      else if (name === "testid") node.dataset.testid = value;
      else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
      else if (name === "dataset") Object.assign(node.dataset, value);
      else node.setAttribute(name, value === true ? "" : String(value));
    }
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function apiKey() {
    try { return localStorage.getItem(KEY_STORAGE) || ""; } catch { return ""; }
  }

  function headers() {
    const key = apiKey().trim();
    return key ? { Authorization: "Bearer " + key, Accept: "application/json" } : { Accept: "application/json" };
  }

  const WHEN = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
  function when(iso) {
    const date = new Date(iso);
    return Number.isNaN(date.getTime()) ? String(iso || "") : WHEN.format(date);
  }

  function score(value) {
    return typeof value === "number" ? value.toFixed(2) : "–";
  }

  function reasonLabel(reason) {
    return REASONS[reason] || reason || "answered";
  }

  function showError(message) {
    const box = $("admin-error");
    box.hidden = !message;
    box.textContent = message || "";
  }

  async function getJson(url) {
    const response = await fetch(url, { headers: headers() });
    if (response.ok) return response.json();
    let message = `${response.status} ${response.statusText}`;
    try {
      const body = await response.json();
      if (body && body.error) message = body.error.message;
    } catch { /* keep the status line */ }
    const error = new Error(message);
    error.status = response.status;
    throw error;
  }

  function keyProblem(exc) {
    if (exc.status === 401 || exc.status === 403) {
      $("settings").open = true;
      return `${exc.message}. Enter an admin key under “Admin key”.`;
    }
    return `Could not load the admin data: ${exc.message}`;
  }

  function traceButton(traceId) {
    return h("button", {
      type: "button", class: "tool-button small-button trace-button", testid: "trace-button",
      dataset: { trace: traceId }, onclick: () => openTrace(traceId),
    }, h("span", { class: "visually-hidden" }, "Open trace "), traceId.slice(0, 8));
  }

  // ---------------------------------------------------------------- summary

  async function loadSummary() {
    let data;
    try {
      data = await getJson("/admin/api/summary");
    } catch (exc) {
      showError(keyProblem(exc));
      document.body.dataset.loaded = "error";
      return;
    }
    showError("");
    $("window").textContent = String(data.window);
    const counts = [
      ["Asks", data.asks, "asks"], ["Answered", data.answered, "answered"],
      ...Object.keys(REASONS).map((r) => [REASONS[r], (data.refusals || {})[r] || 0, r]),
      ["Marked helpful", data.feedback.helpful, "helpful"], ["Marked wrong", data.feedback.wrong, "wrong"],
    ];
    $("counts").replaceChildren(...counts.map(([label, value, key]) => h("div", { class: "count", testid: "count-" + key },
      h("dt", {}, label), h("dd", {}, String(value)))));
    $("groups").replaceChildren(...(data.groups.length ? data.groups.map(groupRow) : [emptyRow(6, "No refusals yet.")]));
    $("wrong").replaceChildren(...(data.wrong.length ? data.wrong.map(wrongRow) : [emptyRow(5, "No answer has been marked wrong.")]));
    $("refusals").replaceChildren(...(data.recent_refusals.length ? data.recent_refusals.map(refusalRow) : [emptyRow(5, "No refusals yet.")]));
    document.body.dataset.loaded = "ok";
  }

  function emptyRow(span, text) {
    return h("tr", {}, h("td", { colspan: span, class: "muted" }, text));
  }

  function groupRow(group) {
    const others = group.questions.filter((q) => q.question !== group.question);
    return h("tr", { testid: "group-row" },
      h("td", {},
        h("span", { class: "group-question", testid: "group-question" }, group.question),
        others.length ? h("details", { class: "variants" },
          h("summary", {}, `${others.length} similar`),
          h("ul", {}, others.map((q) => h("li", {}, `${q.question} (${q.count})`)))) : null),
      h("td", { class: "num", testid: "group-count" }, String(group.count)),
      h("td", {}, h("ul", { class: "plain-list" }, Object.entries(group.reasons).map(([r, n]) =>
        h("li", { testid: "group-reason", dataset: { reason: r } }, `${reasonLabel(r)} (${n})`)))),
      h("td", {}, group.closest.length ? h("ul", { class: "plain-list" }, group.closest.map((c) =>
        h("li", { testid: "group-closest", dataset: { chunkId: c.chunk_id } },
          h("span", { class: "closest-title" }, c.title || c.chunk_id),
          c.section && c.section !== c.title ? h("span", { class: "muted" }, " › " + c.section) : null))) : h("span", { class: "muted" }, "none")),
      h("td", {}, when(group.last_asked)),
      h("td", {}, h("div", { class: "trace-buttons" }, group.traces.slice(0, 3).map(traceButton))));
  }

  function wrongRow(item) {
    return h("tr", { testid: "wrong-row" },
      h("td", {}, when(item.created_at)),
      h("td", {}, item.question),
      h("td", { testid: "wrong-note" }, item.note || h("span", { class: "muted" }, "no note")),
      h("td", { class: "answer-cell" }, item.answer || h("span", { class: "muted" }, item.reason ? reasonLabel(item.reason) : "not logged")),
      h("td", {}, item.logged ? traceButton(item.trace_id) : h("span", { class: "muted" }, item.trace_id)));
  }

  function refusalRow(item) {
    const threshold = typeof item.threshold === "number" ? score(item.threshold) : "–";
    return h("tr", { testid: "refusal-row" },
      h("td", {}, when(item.ts)),
      h("td", {}, item.question),
      h("td", {}, reasonLabel(item.reason)),
      h("td", { class: "num" }, `${score(item.top_score)} / ${threshold}`),
      h("td", {}, traceButton(item.trace_id)));
  }

  // ---------------------------------------------------------------- one trace

  function table(caption, head, rows) {
    return h("div", { class: "table-wrap", tabindex: "0", role: "region", "aria-label": caption },
      h("table", { class: "admin-table compact" },
        h("caption", {}, caption),
        h("thead", {}, h("tr", {}, head.map((c) => h("th", { scope: "col" }, c)))),
        h("tbody", {}, rows.length ? rows.map((r) => h("tr", {}, r.map((c) => h("td", {}, c)))) : [emptyRow(head.length, "none")])));
  }

  function verdictItem(line) {
    // "draft 1 ok [1] Sentence. | issue; issue" (see rag.answer.judge.summary)
    const [head, issues] = String(line).split(" | ");
    const ok = / ok /.test(head);
    return h("li", { class: ok ? "verdict ok" : "verdict dropped", testid: "trace-verdict" },
      h("span", { class: "verdict-status" }, ok ? "kept" : "withheld"), " ", head,
      issues ? h("ul", { class: "reasons" }, issues.split("; ").map((i) => h("li", {}, i))) : null);
  }

  function renderTrace(t) {
    const facts = [
      ["Question", t.question], ["Asked", when(t.ts)],
      ["Outcome", t.abstained ? reasonLabel(t.reason) : "answered"],
      ["Reranker", t.reranker || "–"],
      ["Top score / threshold", `${score(t.top_score)} / ${typeof t.threshold === "number" ? score(t.threshold) : "–"}`],
    ];
    const retrieved = (t.retrieved || []).map((r, i) => [String(i + 1), r.title ? `${r.title}${r.section && r.section !== r.title ? " › " + r.section : ""}` : r.chunk_id,
      score(r.score), r.sent_as ? `[${r.sent_as}]` : "not sent"]);
    const blocks = (t.blocks || []).map((b) => [`[${b.n}]`, b.title || b.chunk_id, b.chunk_id]);
    const timings = Object.entries(t.timings || {}).map(([k, v]) => [k, typeof v === "number" ? v.toFixed(1) : String(v)]);
    const usage = Object.entries(t.usage || {}).map(([k, v]) => [k, String(v)]);
    const feedback = (t.feedback || []).map((f) => [when(f.created_at), f.verdict, f.note || ""]);
    $("trace-title").textContent = `Trace ${t.trace_id}`;
    $("trace-body").replaceChildren(
      h("dl", { class: "trace-facts", testid: "trace-facts" }, facts.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])),
      t.answer ? h("div", { class: "trace-answer" }, h("h3", {}, "Answer shown"), h("p", { testid: "trace-answer" }, t.answer)) : null,
      table("Retrieved, best first", ["#", "Chunk", "Score", "Sent as"], retrieved),
      table("Blocks sent to the model", ["Block", "Document", "Chunk id"], blocks),
      h("div", {}, h("h3", {}, "Drafts and verdicts"),
        (t.verdicts || []).length ? h("ol", { class: "verdicts", testid: "trace-verdicts" }, t.verdicts.map(verdictItem))
          : h("p", { class: "muted" }, "No draft: refused before generation.")),
      table("Timings (ms)", ["Stage", "ms"], timings),
      table("Usage", ["Item", "Value"], usage),
      table("Feedback", ["When", "Verdict", "Note"], feedback));
    $("trace").hidden = false;
  }

  async function openTrace(traceId) {
    try {
      renderTrace(await getJson("/admin/api/traces/" + encodeURIComponent(traceId)));
    } catch (exc) {
      showError(exc.status === 404 ? `No ask with trace ${traceId} is in the log.` : keyProblem(exc));
      return;
    }
    if (location.hash !== "#trace=" + traceId) history.replaceState(null, "", "#trace=" + encodeURIComponent(traceId));
    $("trace-title").focus();
    $("trace").scrollIntoView({ block: "start" });
  }

  // ---------------------------------------------------------------- exports

  async function download(what, format) {
    const status = $("export-status");
    status.textContent = "Preparing…";
    try {
      const response = await fetch(`/admin/api/export?what=${what}&format=${format}`, { headers: headers() });
      if (!response.ok) throw Object.assign(new Error(`${response.status} ${response.statusText}`), { status: response.status });
      const blob = await response.blob();
      const link = h("a", { href: URL.createObjectURL(blob), download: `rag-${what}.${format}`, class: "visually-hidden" });
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(link.href), 10_000);
      status.textContent = `Downloaded rag-${what}.${format}.`;
    } catch (exc) {
      status.textContent = "";
      showError(keyProblem(exc));
    }
  }

  for (const button of $("exports").querySelectorAll("button")) {
    button.addEventListener("click", () => download(button.dataset.what, button.dataset.format));
  }

  const keyInput = $("api-key");
  keyInput.value = apiKey();
  keyInput.form.addEventListener("submit", (e) => e.preventDefault());
  keyInput.addEventListener("change", () => {
    try {
      const value = keyInput.value.trim();
      if (value) localStorage.setItem(KEY_STORAGE, value);
      else localStorage.removeItem(KEY_STORAGE);
    } catch { /* storage disabled */ }
    loadSummary();
  });

  loadSummary().then(() => {
    const match = /^#trace=(.+)$/.exec(location.hash);
    if (match) openTrace(decodeURIComponent(match[1]));
  });
})();
