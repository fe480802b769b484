/* The one-page client: ask, stream verified sentences over SSE, open cited spans.
 *
 * Talks to POST /ask/stream (fetch + ReadableStream, so an Authorization header can
 * be sent) and GET /chunks/{id}. Citation offsets are end-exclusive character
 * offsets into the ORIGINAL chunk text, which the source panel highlights.
 * No build step, no dependencies, works offline.
 */
"use strict";

(() => {
  const KEY_STORAGE = "rag.apiKey";
  const HISTORY_STORAGE = "rag.history";
  const SEED_STORAGE = "rag.examplesSeed";
  const HISTORY_MAX = 20;
  const $ = (id) => document.getElementById(id);
  const ui = {
    form: $("ask-form"),
    question: $("question"),
    askButton: $("ask-button"),
    apiKey: $("api-key"),
    settings: $("settings"),
    kbStatus: $("kb-status"),
    embedStatus: $("embed-status"),
    empty: $("empty"),
    result: $("result"),
    asked: $("asked"),
    searchedFor: $("searched-for"),
    thread: $("thread"),
    followupForm: $("followup-form"),
    followup: $("followup"),
    newConversation: $("new-conversation"),
    status: $("status"),
    refusal: $("refusal"),
    answer: $("answer"),
    error: $("error"),
    withheld: $("withheld"),
    withheldCount: $("withheld-count"),
    withheldList: $("withheld-list"),
    builtFrom: $("built-from"),
    builtFromTitle: $("built-from-title"),
    blocks: $("blocks"),
    metaLine: $("meta-line"),
    layout: $("layout"),
    panel: $("source-panel"),
    panelClose: $("panel-close"),
    sourceN: $("source-n"),
    sourceTitle: $("source-title"),
    sourceSection: $("source-section"),
    sourceUpdated: $("source-updated"),
    sourceLink: $("source-link"),
    sourceNote: $("source-note"),
    sourceText: $("source-text"),
    sourceId: $("source-id"),
    sourceView: $("source-view"),
    examples: $("examples"),
    exampleList: $("example-list"),
    history: $("history"),
    historyCount: $("history-count"),
    historyList: $("history-list"),
    tools: $("answer-tools"),
    copyText: $("copy-text"),
    copyMarkdown: $("copy-markdown"),
    copyStatus: $("copy-status"),
    feedback: $("feedback"),
    feedbackMore: $("feedback-more"),
    feedbackNote: $("feedback-note"),
    feedbackStatus: $("feedback-status"),
    feedbackButtons: [$("feedback-helpful"), $("feedback-wrong")],
  };

  /** State of the ask in flight (or last finished). Replaced on every ask. */
  let run = null;
  /** The conversation on this page: its id and earlier turns ({question, answer}), kept here only
   * (the service is stateless: every follow-up sends them). */
  const HISTORY_TURNS = 8;
  let conversation = newConversation();
  /** Incremented on every panel open, so a slow chunk fetch never overwrites a newer one. */
  let panelSeq = 0;
  let panelOpener = null;
  /** What the panel shows now, so the plain/formatted toggle can draw it again. */
  let panelShown = null;
  /** The panel's view: formatted Markdown/reST (default) or the plain original text. */
  let plainView = false;
  const chunkCache = new Map();

  // ---------------------------------------------------------------- helpers

  function h(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (name === "class") node.className = value;
      else if (name === "testid") node.dataset.testid = value;
      else if (name === "text") node.textContent = value;
      else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
      else if (name === "dataset") Object.assign(node.dataset, value);
      else if (name === "style") Object.assign(node.style, value);  // CSSOM: allowed by the CSP
      else node.setAttribute(name, value === true ? "" : String(value));
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  const DATE_FORMAT = new Intl.DateTimeFormat(undefined, {
    day: "numeric", month: "short", year: "numeric", timeZone: "UTC",
  });

  /** "2026-05-12" -> "12 May 2026" (locale-dependent); "" for a missing date. */
  function formatDate(iso) {
    if (!iso) return "";
    const parsed = new Date(iso.length === 10 ? iso + "T00:00:00Z" : iso);
    return Number.isNaN(parsed.getTime()) ? String(iso) : DATE_FORMAT.format(parsed);
  }

  function timeEl(iso, prefix) {
    if (!iso) return h("span", { class: "muted" }, prefix ? prefix + " date unknown" : "date unknown");
    return h("span", {}, prefix ? prefix + " " : "", h("time", { datetime: iso }, formatDate(iso)));
  }

  function formatScore(score) {
    return typeof score === "number" ? score.toFixed(2) : "";
  }

  function apiKey() {
    try { return localStorage.getItem(KEY_STORAGE) || ""; } catch { return ""; }
  }

  function authHeaders(extra) {
    const headers = Object.assign({}, extra || {});
    const key = apiKey().trim();
    if (key) headers.Authorization = "Bearer " + key;
    return headers;
  }

  function chunkUrl(chunkId) {
    return "/chunks/" + encodeURIComponent(chunkId);
  }

  /** Reads a JSON error body {error:{type,message}}; falls back to the status line. */
  async function readError(response) {
    let type = "http_" + response.status;
    let message = response.statusText || "Request failed";
    try {
      const body = await response.json();
      if (body && body.error) {
        type = body.error.type || type;
        message = body.error.message || message;
      } else if (body && typeof body.detail === "string") {
        message = body.detail;
      }
    } catch { /* not JSON: keep the status line */ }
    return { type, message, retryAfter: response.headers.get("Retry-After") };
  }

  function describeHttpError(status, err) {
    if (status === 401 || status === 403) {
      ui.settings.open = true;
      return {
        title: "This service needs an API key.",
        detail: apiKey() ? "The saved API key was not accepted. Check it under Settings." :
          "Enter your API key under Settings, then ask again.",
      };
    }
    if (status === 503) {
      const wait = err.retryAfter ? ` Try again in about ${err.retryAfter} seconds.` : " Try again in a moment.";
      return { title: "The answering service is temporarily unavailable.", detail: err.message + wait };
    }
    if (status === 422 || status === 413) {
      return { title: "That question can't be asked as written.", detail: err.message };
    }
    return { title: `The service returned an error (${status}).`, detail: err.message };
  }

  // ---------------------------------------------------------------- SSE

  function parseEventBlock(raw) {
    let event = "message";
    const data = [];
    for (const line of raw.split("\n")) {
      if (!line || line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon === -1 ? line : line.slice(0, colon);
      let value = colon === -1 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "event") event = value;
      else if (field === "data") data.push(value);
    }
    if (!data.length) return null;
    const text = data.join("\n");
    try {
      return { event, data: JSON.parse(text) };
    } catch {
      return { event, data: null, raw: text };
    }
  }

  /** Yields {event, data} for each SSE event in a fetch body; comments (keep-alives) are skipped. */
  async function* sseEvents(body, signal) {
    const reader = body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    try {
      for (;;) {
        if (signal && signal.aborted) return;
        const { value, done } = await reader.read();
        if (done) break;
        buffer = (buffer + decoder.decode(value, { stream: true })).replace(/\r\n/g, "\n");
        let cut;
        while ((cut = buffer.indexOf("\n\n")) !== -1) {
          const parsed = parseEventBlock(buffer.slice(0, cut));
          buffer = buffer.slice(cut + 2);
          if (parsed) yield parsed;
        }
      }
      buffer += decoder.decode();
      const tail = buffer.trim() ? parseEventBlock(buffer.trim()) : null;
      if (tail) yield tail;
    } finally {
      reader.releaseLock();
    }
  }

  // ---------------------------------------------------------------- asking

  function resetResult(question) {
    closePanel(false);
    ui.empty.hidden = true;
    ui.result.hidden = false;
    ui.layout.classList.add("has-result");
    ui.asked.textContent = question;
    ui.searchedFor.hidden = true;
    ui.searchedFor.textContent = "";
    ui.followupForm.hidden = true;
    ui.refusal.replaceChildren();
    ui.answer.replaceChildren();
    ui.answer.hidden = true;
    ui.error.replaceChildren();
    ui.withheld.hidden = true;
    ui.withheld.open = false;
    ui.withheldList.replaceChildren();
    ui.withheldCount.textContent = "0";
    ui.builtFrom.hidden = true;
    ui.builtFromTitle.textContent = "What the answer was built from";
    ui.blocks.replaceChildren();
    ui.metaLine.textContent = "";
    ui.tools.hidden = true;
    ui.copyStatus.textContent = "";
    resetFeedback();
    setStatus("busy", "Searching the knowledge base…");
  }

  function setStatus(kind, text) {
    ui.status.dataset.state = kind;
    const parts = [h("span", {}, text)];
    if (kind === "busy") parts.unshift(h("span", { class: "spinner", "aria-hidden": "true" }));
    ui.status.replaceChildren(...parts);
  }

  function setBusy(busy) {
    ui.askButton.disabled = false;
    ui.askButton.textContent = busy ? "Asking…" : "Ask";
    ui.result.setAttribute("aria-busy", busy ? "true" : "false");
  }

  function newState(question) {
    return {
      question,
      controller: new AbortController(),
      blocks: new Map(),
      sources: new Map(),
      sentences: [],
      events: [],
      traceId: "",
      emitted: 0,
      dropped: 0,
      reason: "",
      failed: false,
      done: false,
      replayed: false,
      historyId: "",
      feedback: "",
      searchedFor: "",
    };
  }

  function newConversation() {
    const id = (window.crypto && crypto.randomUUID) ? crypto.randomUUID() : String(Date.now());
    return { id: `page-${id}`, turns: [] };
  }

  /** Starts over: the earlier turns are forgotten and the page shows no answer. */
  function startConversation() {
    if (run) run.controller.abort();
    run = null;
    conversation = newConversation();
    ui.thread.replaceChildren();
    ui.thread.hidden = true;
    closePanel(false);
    ui.result.hidden = true;
    ui.empty.hidden = false;
    ui.layout.classList.remove("has-result");
    ui.question.value = "";
    ui.question.focus();
  }

  /** Moves the shown turn into the thread above, its chips and sources still working (the same
   * nodes), and remembers its question and shown answer for the next follow-up. */
  function archiveTurn(state) {
    const moved = (node) => [...node.childNodes];
    const sources = moved(ui.blocks);
    const turn = h("li", { class: "turn", testid: "thread-turn" },
      h("h2", { class: "turn-question", testid: "turn-question" }, state.question),
      state.searchedFor ? h("p", { class: "searched-for", testid: "turn-searched-for" }, `Searched for: ${state.searchedFor}`) : null,
      h("div", { class: "refusal-slot" }, moved(ui.refusal)),
      h("div", { class: "answer", testid: "turn-answer" }, moved(ui.answer)),
      sources.length ? h("details", { class: "turn-sources", testid: "turn-sources" },
        h("summary", {}, `Sources (${sources.length})`), h("ol", { class: "blocks" }, sources)) : null);
    ui.thread.append(turn);
    ui.thread.hidden = false;
    conversation.turns.push({ question: state.question, answer: state.sentences.map((s) => s.text).join(" ") });
  }

  /** A follow-up: the shown turn joins the thread, and the question is asked with the earlier turns. */
  function askFollowUp(question) {
    if (run) {
      run.controller.abort();
      archiveTurn(run);
    }
    ask(question, { followUp: true });
  }

  async function ask(question, { followUp = false } = {}) {
    if (run) run.controller.abort();
    if (!followUp && conversation.turns.length) {
      conversation = newConversation();
      ui.thread.replaceChildren();
      ui.thread.hidden = true;
    }
    const state = newState(question);
    run = state;
    resetResult(question);
    setBusy(true);
    const body = { question };
    if (followUp && conversation.turns.length) {
      body.history = conversation.turns.slice(-HISTORY_TURNS);
      body.conversation_id = conversation.id;
    }

    let response;
    try {
      response = await fetch("/ask/stream", {
        method: "POST",
        headers: authHeaders({ "Content-Type": "application/json", Accept: "text/event-stream" }),
        body: JSON.stringify(body),
        signal: state.controller.signal,
      });
    } catch (exc) {
      if (state.controller.signal.aborted) return;
      showError(state, "Could not reach the service.", "Check your connection and try again.", "network");
      finish(state);
      return;
    }
    if (run !== state) return;
    state.traceId = response.headers.get("X-Trace-Id") || "";
    if (!response.ok) {
      const err = await readError(response);
      const { title, detail } = describeHttpError(response.status, err);
      showError(state, title, detail, err.type);
      finish(state);
      return;
    }

    try {
      for await (const ev of sseEvents(response.body, state.controller.signal)) {
        if (run !== state) return;
        handleEvent(state, ev);
      }
    } catch (exc) {
      if (state.controller.signal.aborted || run !== state) return;
      showError(state, "The connection was lost while the answer was arriving.",
        keptNote(state) + "Ask again to get the complete answer.", "network");
    }
    if (run !== state) return;
    if (!state.done && !state.failed) {
      showError(state, "The answer stream ended before it was complete.",
        keptNote(state) + "Ask again to get the complete answer.", "incomplete");
    }
    finish(state);
  }

  function keptNote(state) {
    return state.emitted ? "The sentences above were verified before the interruption. " : "";
  }

  function finish(state) {
    if (run !== state) return;
    setBusy(false);
    if (ui.status.dataset.state === "busy") {
      if (state.failed) setStatus("error", "Stopped by an error.");
      else ui.status.replaceChildren();
    }
    ui.tools.hidden = !(state.done && (state.emitted || state.reason));
    ui.copyText.closest(".copy-tools").hidden = state.sentences.length === 0;
    ui.feedback.hidden = !state.traceId;
    ui.followupForm.hidden = state.replayed || !(state.done || state.failed);
    if (state.feedback) showFeedbackSent(state.feedback);
    if (!state.replayed && state.done) remember(state);
    ui.result.dataset.finished = String(Number(ui.result.dataset.finished || 0) + 1);
  }

  function handleEvent(state, ev) {
    const data = ev.data || {};
    if (!state.replayed) state.events.push({ event: ev.event, data: ev.data });
    switch (ev.event) {
      case "meta": return onMeta(state, data);
      case "sentence": return onSentence(state, data);
      case "dropped": return onDropped(state, data);
      case "refusal": return onRefusal(state, data);
      case "error":
        return showError(state, "Something went wrong while answering.",
          (data.message || "The service reported an error.") + (state.emitted ? " " + keptNote(state).trim() : ""),
          data.type || "error");
      case "done": return onDone(state, data);
      default: return undefined;
    }
  }

  /** "Searched for: ..." when retrieval searched for more than the question as asked (a follow-up). */
  function showSearchedFor(state, data) {
    const searched = data.searched_for || "";
    if (!searched || searched === state.question) return;
    state.searchedFor = searched;
    ui.searchedFor.textContent = `Searched for: ${searched}`;
    ui.searchedFor.hidden = false;
  }

  function onMeta(state, data) {
    showSearchedFor(state, data);
    const blocks = Array.isArray(data.blocks) ? data.blocks.slice().sort((a, b) => a.n - b.n) : [];
    for (const block of blocks) state.blocks.set(block.n, block);
    if (data.trace_id && !state.traceId) state.traceId = data.trace_id;
    // One entry per chunk (a chunk issued under two numbers is one source), most relevant first.
    for (const block of blocks) {
      const known = state.sources.get(block.chunk_id);
      if (known) {
        known.ns.push(block.n);
        known.score = Math.max(known.score, block.score ?? 0);
      } else {
        state.sources.set(block.chunk_id, Object.assign({}, block, {
          chunkId: block.chunk_id, ns: [block.n], score: block.score ?? 0, spans: [], cited: 0, item: null,
        }));
      }
    }
    const ordered = [...state.sources.values()].sort((a, b) => b.score - a.score || a.ns[0] - b.ns[0]);
    ui.blocks.replaceChildren(...ordered.map((source) => sourceItem(source)));
    ui.builtFrom.hidden = ordered.length === 0;
    const parts = [];
    if (typeof data.context_tokens === "number") parts.push(`about ${data.context_tokens} tokens of context`);
    if (data.trace_id) parts.push(`trace ${data.trace_id}`);
    ui.metaLine.textContent = parts.join(" · ");
    if (blocks.length) {
      setStatus("busy", `Writing and checking the answer against ${blocks.length} source${blocks.length === 1 ? "" : "s"}…`);
    }
  }

  function sourceItem(source) {
    const score = Math.max(0, Math.min(1, source.score || 0));
    const fill = h("span", { class: "score-fill" });
    fill.style.width = `${(score * 100).toFixed(0)}%`; // CSSOM, allowed by a strict style-src
    const badge = h("span", { class: "block-cited", testid: "block-cited", hidden: true });
    // The accessible name is the visible text plus a few hidden words, so it reads as a sentence.
    const button = h("button", {
      type: "button",
      class: "block-button",
      "aria-controls": "source-panel",
      onclick: (e) => openSource({
        chunkId: source.chunkId, n: source.ns[0], spans: source.spans, hint: source, opener: e.currentTarget,
      }),
    },
    h("span", { class: "visually-hidden" }, "Open source "),
    h("span", { class: "block-n", testid: "block-n" }, source.ns.join(" · ")),
    h("span", { class: "block-main" },
      h("span", { class: "block-title", testid: "block-title" }, source.title || source.chunkId),
      source.section && source.section !== source.title ? h("span", { class: "block-section" }, source.section) : null,
      Number.isInteger(source.page) ? h("span", { class: "block-page", testid: "block-page" }, `page ${source.page}`) : null),
    badge,
    h("span", { class: "block-score", title: "Relevance score (0 to 1)" },
      h("span", { class: "visually-hidden" }, "relevance "),
      h("span", { class: "score-bar", "aria-hidden": "true" }, fill),
      h("span", { class: "score-num", testid: "block-score" }, formatScore(source.score))));
    source.item = { button, badge };
    return h("li", {
      class: "block", testid: "block-item", dataset: { n: source.ns[0], ns: source.ns.join(" "), chunkId: source.chunkId },
    }, button);
  }

  /** Notes that `source` was cited once more with `spans`; its list entry shows the count. */
  function noteCited(source, spans) {
    source.cited += 1;
    for (const span of spans) {
      if (!source.spans.some((s) => s.start === span.start && s.end === span.end)) source.spans.push(span);
    }
    if (source.item) {
      source.item.badge.hidden = false;
      source.item.badge.textContent = `cited ${source.cited}×`;
    }
  }

  function onSentence(state, data) {
    state.emitted += 1;
    ui.answer.hidden = false;
    const citations = Array.isArray(data.citations) ? data.citations : [];
    state.sentences.push({
      text: data.text || "", starts: data.starts || "", number: data.number, cells: data.cells, citations,
    });
    // One chip per cited chunk; every span of that chunk is highlighted together.
    const byChunk = new Map();
    for (const c of citations) {
      if (!byChunk.has(c.chunk_id)) byChunk.set(c.chunk_id, []);
      byChunk.get(c.chunk_id).push(c);
    }
    const groups = [...byChunk.values()].map((group) => [Math.min(...group.map((c) => c.n)), group]);
    const chips = groups.sort((a, b) => a[0] - b[0]).map(([n, group]) => chip(state, n, group));
    const starts = data.starts || "";
    if ((starts === "header" || starts === "row") && Array.isArray(data.cells)) {
      tableRow(state, starts, data.cells, chips);
    } else {
      const shown = h("span", { class: "sentence-text" });
      if (window.RagMarkup) window.RagMarkup.renderInline(shown, data.text || "");
      else shown.textContent = data.text || "";
      const sentence = h("span", { class: "sentence", testid: "answer-sentence" },
        shown,
        chips.length ? h("span", { class: "chips" }, chips) : null);
      const into = layoutFor(state, starts, data.number);
      if (into.childNodes.length) into.append(" ");
      into.append(sentence);
    }
    setStatus("busy", `${state.emitted} verified sentence${state.emitted === 1 ? "" : "s"} so far…`);
  }

  /** Where a sentence goes: on in the current paragraph or item, a new paragraph, or a new bulleted
   * or numbered list item (a numbered one keeps its number). */
  function layoutFor(state, starts, number) {
    if (starts === "item" || starts === "numbered") {
      const kind = starts === "numbered" ? "ol" : "ul";
      if (!state.list || state.list.tagName.toLowerCase() !== kind) {
        state.list = h(kind, { class: "answer-list" });
        ui.answer.append(state.list);
      }
      state.current = h("li", { class: "answer-item" });
      if (starts === "numbered" && Number.isInteger(number)) state.current.value = number;
      state.list.append(state.current);
    } else if (starts === "paragraph" || !state.current || state.table) {
      state.list = null;
      state.table = null;
      state.current = h("p", { class: "answer-para" });
      ui.answer.append(state.current);
    }
    return state.current;
  }

  /** A table row of the answer: its header row, or a row whose cited cells verified (chips at its end). */
  function tableRow(state, starts, cells, chips) {
    if (!state.table || starts === "header") {
      state.table = h("table", { class: "answer-table", testid: "answer-table" });
      state.tableBody = h("tbody");
      state.table.append(state.tableBody);
      ui.answer.append(state.table);
      state.list = null;
      state.current = null;
    }
    const tag = starts === "header" ? "th" : "td";
    const row = h("tr", { testid: starts === "header" ? "answer-table-header" : "answer-table-row" });
    cells.forEach((cell, i) => {
      const node = h(tag, { scope: tag === "th" ? "col" : null });
      if (window.RagMarkup) window.RagMarkup.renderInline(node, cell || "");
      else node.textContent = cell || "";
      if (i === cells.length - 1 && chips.length) node.append(" ", h("span", { class: "chips" }, chips));
      row.append(node);
    });
    if (starts === "header") {
      const head = h("thead");
      head.append(row);
      state.table.insertBefore(head, state.tableBody);
    } else {
      state.tableBody.append(row);
    }
  }

  function chip(state, n, group) {
    const first = group[0];
    const block = state.blocks.get(n);
    const title = first.title || (block && block.title) || first.chunk_id;
    const spans = group.map((c) => ({ start: c.start, end: c.end, cited: c.cited_text }));
    const source = state.sources.get(first.chunk_id);
    if (source) noteCited(source, spans);
    const where = Number.isInteger(first.page) ? `${title}, page ${first.page}` : title;
    return h("button", {
      type: "button",
      class: "chip",
      testid: "citation-chip",
      "aria-label": `Source ${n}: ${where}`,
      "aria-controls": "source-panel",
      "aria-expanded": "false",
      title: `${where}\n“${first.cited_text || ""}”`,
      dataset: {
        n, chunkId: first.chunk_id, start: first.start, end: first.end, citedText: first.cited_text || "",
      },
      onclick: (e) => openSource({
        chunkId: first.chunk_id, n, spans, hint: Object.assign({ title, url: first.url }, block || {}),
        opener: e.currentTarget,
      }),
    }, String(n));
  }

  function onDropped(state, data) {
    state.dropped += 1;
    ui.withheld.hidden = false;
    ui.withheldCount.textContent = String(state.dropped);
    const reasons = Array.isArray(data.detail) ? data.detail : [];
    ui.withheldList.append(h("li", { class: "withheld-item", testid: "withheld-item" },
      h("q", { class: "withheld-text" }, data.text || ""),
      reasons.length ? h("ul", { class: "reasons" }, reasons.map((r) => h("li", { testid: "withheld-reason" }, r))) : null));
  }

  function onDone(state, data) {
    state.done = true;
    const withheld = state.dropped ? ` · ${state.dropped} withheld` : "";
    if (data.status === "answered") {
      setStatus("ok", `${data.emitted ?? state.emitted} verified sentence${(data.emitted ?? state.emitted) === 1 ? "" : "s"}${withheld}. Select a number to read its source.`);
    } else if (data.status === "abstained") {
      const why = {
        low_retrieval_score: "Not found in the knowledge base",
        conflicting_sources: "The sources disagree; both are shown",
        no_citations: "No supported answer",
      }[state.reason] || "No answer given";
      setStatus("abstained", `${why}${withheld}.`);
    } else if (data.status === "error") {
      state.failed = true;
      setStatus("error", "Stopped by an error" + (state.emitted ? "; the sentences shown were verified." : "."));
    }
  }

  function showError(state, title, detail, type) {
    state.failed = true;
    ui.error.replaceChildren(h("div", { class: "alert", role: "alert", testid: "error-message", dataset: { type: type || "" } },
      h("strong", {}, title), detail ? h("p", {}, detail) : null));
    setStatus("error", "Stopped by an error.");
  }

  // ---------------------------------------------------------------- refusals

  function onRefusal(state, data) {
    showSearchedFor(state, data);
    const reason = data.reason || "";
    state.reason = reason;
    let view;
    if (reason === "low_retrieval_score") view = lowScoreView(data);
    else if (reason === "conflicting_sources") view = conflictView(data);
    else if (reason === "no_citations") view = noCitationsView(data);
    else view = refusalCard("other", "No answer was given.", data.message ? h("p", {}, data.message) : null);
    view.dataset.reason = reason;
    ui.refusal.replaceChildren(view);
    ui.builtFromTitle.textContent = "What was retrieved";
  }

  function refusalCard(kind, heading, ...body) {
    return h("section", { class: `refusal refusal-${kind}`, testid: "refusal", "aria-label": heading },
      h("div", { class: "refusal-icon", "aria-hidden": "true" }),
      h("div", { class: "refusal-body" }, h("h2", { class: "refusal-heading" }, heading), ...body));
  }

  function closestList(closest, label) {
    const refs = Array.isArray(closest) ? closest : [];
    if (!refs.length) return null;
    return h("div", { class: "closest" },
      h("h3", {}, label),
      h("ul", { class: "closest-list", testid: "closest-list" }, refs.map((ref) => h("li", {},
        h("a", {
          href: chunkUrl(ref.chunk_id),
          class: "closest-link",
          testid: "closest-link",
          dataset: { chunkId: ref.chunk_id },
          onclick: (e) => {
            e.preventDefault();
            openSource({ chunkId: ref.chunk_id, hint: ref, opener: e.currentTarget });
          },
        }, ref.title || ref.chunk_id),
        h("span", { class: "closest-meta" },
          [ref.section && ref.section !== ref.title ? ref.section : "",
            ref.updated_at ? "updated " + formatDate(ref.updated_at) : "",
            typeof ref.score === "number" ? "score " + formatScore(ref.score) : ""].filter(Boolean).join(" · ")),
        mayAnswer(ref)))));
  }

  // An offline refusal marks each closest passage's likeliest sentence: shown highlighted, as a
  // lead to read, never as an answer (no model confirmed it); a click opens it in its passage.
  function mayAnswer(ref) {
    const may = ref.may_answer;
    if (!may || !may.text) return null;
    return h("p", { class: "may-answer", testid: "may-answer" },
      h("span", { class: "may-answer-label" }, "May answer (not confirmed): "),
      h("mark", {
        role: "button", tabindex: "0",
        onclick: (e) => openSource({
          chunkId: ref.chunk_id, spans: [{ start: may.start, end: may.end, cited: may.text }],
          hint: ref, opener: e.currentTarget,
        }),
      }, may.text));
  }

  function lowScoreView(data) {
    const view = refusalCard("low", "I couldn't find this in the knowledge base.",
      h("p", {}, "None of the indexed documents is close enough to this question to answer it."),
      closestList(data.closest, "Closest matches"),
      h("p", { class: "muted" }, "If it should exist, it may not be indexed yet."));
    view.dataset.testid = "refusal-low-retrieval";
    return view;
  }

  function noCitationsView(data) {
    const offline = Array.isArray(data.closest) && data.closest.some((ref) => ref && ref.may_answer);
    const view = offline
      ? refusalCard("nocite", "The passages below may hold the answer.",
        h("p", {}, data.message || "No language model read them. Set ANTHROPIC_API_KEY to have them read."),
        closestList(data.closest, "Closest passages"))
      : refusalCard("nocite", "Relevant documents were found, but none of them directly answers this question.",
        h("p", {}, "No sentence could be tied to a passage that supports it, so nothing is shown rather than an unsupported answer."),
        closestList(data.closest, "Closest sources"));
    view.dataset.testid = "refusal-no-citations";
    return view;
  }

  function conflictView(data) {
    const conflict = data.conflict || {};
    const statements = Array.isArray(conflict.statements) ? conflict.statements : [];
    const newest = statements.reduce((best, s) => (s.updated_at && (!best || s.updated_at > best) ? s.updated_at : best), "");
    const distinctDates = new Set(statements.map((s) => s.updated_at || "")).size > 1;
    const shared = Array.isArray(conflict.context) ? conflict.context.filter(Boolean) : [];
    const cards = statements.map((s) => {
      const isNewest = distinctDates && s.updated_at && s.updated_at === newest;
      return h("button", {
        type: "button",
        class: "statement" + (isNewest ? " is-newest" : ""),
        testid: "conflict-statement",
        dataset: { chunkId: s.chunk_id, start: s.start, end: s.end },
        onclick: (e) => openSource({
          chunkId: s.chunk_id, n: s.n, spans: [{ start: s.start, end: s.end, cited: s.text }],
          hint: s, opener: e.currentTarget,
        }),
      },
      h("span", { class: "statement-top" },
        h("span", { class: "statement-value", testid: "statement-value" }, s.quantity || ""),
        isNewest ? h("span", { class: "badge" }, "Newer") : null),
      h("span", { class: "statement-text", testid: "statement-text" }, "“" + (s.text || "") + "”"),
      h("span", { class: "statement-source" },
        h("span", { class: "statement-title", testid: "statement-title" }, s.title || s.doc_id),
        h("span", { class: "statement-date", testid: "statement-date" }, timeEl(s.updated_at, "Updated"))),
      h("span", { class: "statement-open" }, "Show in source →"));
    });
    const view = refusalCard("conflict", "The sources disagree.",
      h("p", {}, `${statements.length > 2 ? statements.length : "Two"} documents give different values for the same thing. Both are shown so you can decide which applies; check the dates.`),
      h("div", { class: "statements", testid: "conflict-statements" }, cards),
      shared.length ? h("p", { class: "muted small", testid: "conflict-context" }, "Matched on: " + shared.join(", ")) : null,
      conflict.policy && conflict.policy !== "present_both" ? h("p", { class: "muted" }, `Policy: ${conflict.policy}`) : null);
    view.dataset.testid = "refusal-conflict";
    return view;
  }

  // ---------------------------------------------------------------- source panel

  async function fetchChunk(chunkId) {
    if (chunkCache.has(chunkId)) return chunkCache.get(chunkId);
    const response = await fetch(chunkUrl(chunkId), { headers: authHeaders({ Accept: "application/json" }) });
    if (!response.ok) {
      const err = await readError(response);
      const failure = new Error(err.message);
      failure.status = response.status;
      throw failure;
    }
    const chunk = await response.json();
    chunkCache.set(chunkId, chunk);
    return chunk;
  }

  /** Resolves claimed spans against the chunk text: offsets first, then the cited text itself. */
  function resolveSpans(text, spans) {
    const found = [];
    let missing = 0;
    for (const span of spans || []) {
      const { start, end, cited } = span;
      const valid = Number.isInteger(start) && Number.isInteger(end) && start >= 0 && end > start && end <= text.length;
      if (valid && (!cited || text.slice(start, end) === cited)) {
        found.push([start, end]);
        continue;
      }
      const at = cited ? text.indexOf(cited) : -1;
      if (at !== -1) found.push([at, at + cited.length]);
      else missing += 1;
    }
    found.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    const merged = [];
    for (const [s, e] of found) {
      const last = merged[merged.length - 1];
      if (last && s <= last[1]) last[1] = Math.max(last[1], e);
      else merged.push([s, e]);
    }
    return { ranges: merged, missing };
  }

  function renderPlain(text, ranges) {
    const nodes = [];
    let at = 0;
    ranges.forEach(([s, e], i) => {
      if (s > at) nodes.push(document.createTextNode(text.slice(at, s)));
      nodes.push(h("mark", { testid: "source-mark", dataset: { start: s, end: e, span: i } }, text.slice(s, e)));
      at = e;
    });
    if (at < text.length) nodes.push(document.createTextNode(text.slice(at)));
    ui.sourceText.replaceChildren(...nodes);
  }

  /**
   * Draws the chunk: its Markdown/reST formatted (markup.js), or the original text as it is.
   * Either way every <mark> covers exactly cited characters (data-start/end are offsets into the
   * original text). When a cited range would have no visible character once formatted (it lies
   * inside hidden markup), the plain original is shown instead so the highlight is never lost.
   */
  function renderChunkText(text, ranges) {
    ui.sourceText.classList.toggle("is-plain", plainView);
    ui.sourceView.hidden = !text;
    ui.sourceView.setAttribute("aria-pressed", plainView ? "true" : "false");
    ui.sourceView.textContent = plainView ? "Show formatted" : "Show plain text";
    if (!plainView && window.RagMarkup) {
      const box = document.createElement("div");
      const counts = window.RagMarkup.render(box, text, ranges, { testid: "source-mark" });
      if (counts.every((c) => c > 0)) {
        ui.sourceText.replaceChildren(...box.childNodes);
        ui.sourceText.dataset.view = "formatted";
        return;
      }
    }
    renderPlain(text, ranges);
    ui.sourceText.dataset.view = "plain";
  }

  /** A document URL fit for a link: http(s) or site-relative only (front matter is untrusted). */
  function safeUrl(url) {
    if (!url) return "";
    try {
      const parsed = new URL(url, window.location.href);
      return parsed.protocol === "http:" || parsed.protocol === "https:" ? parsed.href : "";
    } catch (_) {
      return "";
    }
  }

  function fillProvenance(info, n) {
    ui.sourceN.textContent = n ? `[${n}]` : "";
    ui.sourceTitle.textContent = info.title || info.doc_id || info.chunk_id || "";
    const section = info.section && info.section !== info.title ? info.section : "";
    const where = [section, Number.isInteger(info.page) ? `page ${info.page}` : ""].filter(Boolean).join(" · ");
    ui.sourceSection.textContent = where;
    ui.sourceSection.hidden = !where;
    ui.sourceUpdated.replaceChildren(timeEl(info.updated_at, "Updated"));
    const url = safeUrl(info.url);
    if (url) {
      ui.sourceLink.href = url;
      ui.sourceLink.hidden = false;
    } else {
      ui.sourceLink.removeAttribute("href");
      ui.sourceLink.hidden = true;
    }
  }

  function markActive(opener) {
    for (const node of document.querySelectorAll(".is-active")) {
      node.classList.remove("is-active");
      if (node.hasAttribute("aria-expanded")) node.setAttribute("aria-expanded", "false");
    }
    if (opener) {
      opener.classList.add("is-active");
      if (opener.hasAttribute("aria-expanded")) opener.setAttribute("aria-expanded", "true");
    }
  }

  /** Opens the source panel on one chunk, highlighting `spans` ({start, end, cited}) when given. */
  async function openSource({ chunkId, n, spans, hint, opener }) {
    const seq = ++panelSeq;
    panelShown = null;
    ui.sourceView.hidden = true;
    panelOpener = opener || null;
    markActive(opener);
    fillProvenance(Object.assign({ chunk_id: chunkId }, hint || {}), n);
    ui.sourceNote.textContent = "";
    ui.sourceNote.hidden = true;
    ui.sourceText.replaceChildren(h("p", { class: "muted" }, "Loading the original passage…"));
    ui.sourceId.textContent = chunkId;
    ui.panel.dataset.chunkId = chunkId;
    ui.panel.dataset.state = "loading";
    ui.panel.hidden = false;
    ui.layout.classList.add("has-panel");
    document.body.classList.add("panel-open");

    let chunk;
    try {
      chunk = await fetchChunk(chunkId);
    } catch (exc) {
      if (seq !== panelSeq) return;
      const gone = exc.status === 404;
      ui.panel.dataset.state = "error";
      ui.sourceNote.hidden = false;
      ui.sourceNote.textContent = gone
        ? "This passage is no longer in the knowledge base; the document may have been re-indexed since."
        : `Could not load the original passage: ${exc.message}`;
      const quoted = (spans || []).map((s) => s.cited).filter(Boolean);
      ui.sourceText.replaceChildren(...quoted.map((q) => h("blockquote", {}, q)));
      ui.panel.focus({ preventScroll: true });
      return;
    }
    if (seq !== panelSeq) return;
    fillProvenance(chunk, n);
    const text = chunk.text || "";
    const { ranges, missing } = resolveSpans(text, spans);
    panelShown = { text, ranges };
    renderChunkText(text, ranges);
    if (missing) {
      ui.sourceNote.hidden = false;
      ui.sourceNote.textContent = "Part of the cited passage was not found in the current version of this document.";
    } else if (ranges.length) {
      ui.sourceNote.hidden = false;
      ui.sourceNote.textContent = "The highlighted passage is the exact text cited.";
    }
    ui.panel.dataset.state = "ready";
    ui.panel.focus({ preventScroll: true });
    scrollPanelTo(ui.sourceText.querySelector("mark"));
  }

  /** Scrolls the panel (not the page) so the first highlight sits in its upper third. */
  function scrollPanelTo(mark) {
    if (!mark) {
      ui.panel.scrollTop = 0;
      return;
    }
    const panelBox = ui.panel.getBoundingClientRect();
    const markBox = mark.getBoundingClientRect();
    ui.panel.scrollTop += markBox.top - panelBox.top - panelBox.height / 3;
    // When the panel itself is off screen (long pages on narrow screens), bring it in too.
    if (panelBox.top > window.innerHeight || panelBox.bottom < 0) mark.scrollIntoView({ block: "center" });
  }

  function closePanel(restoreFocus) {
    panelSeq += 1;
    markActive(null);
    ui.panel.hidden = true;
    ui.layout.classList.remove("has-panel");
    document.body.classList.remove("panel-open");
    if (restoreFocus && panelOpener && document.contains(panelOpener)) panelOpener.focus();
    panelOpener = null;
  }

  // ---------------------------------------------------------------- example questions

  function examplesSeed() {
    try {
      let seed = sessionStorage.getItem(SEED_STORAGE);
      if (!seed) {
        seed = String(Math.floor(Math.random() * 100000));
        sessionStorage.setItem(SEED_STORAGE, seed);
      }
      return seed;
    } catch {
      return "0";
    }
  }

  // The server asks each example before offering it; while it is still asking it answers `pending`,
  // and the page asks again, a little later each time (for about two minutes in all).
  const EXAMPLES_RETRIES = 60;
  let examplesTimer = null;

  async function loadExamples(attempt = 0) {
    clearTimeout(examplesTimer);
    let examples = [];
    let pending = false;
    try {
      const response = await fetch(`/examples?limit=4&seed=${encodeURIComponent(examplesSeed())}`,
        { headers: authHeaders({ Accept: "application/json" }) });
      if (response.ok) {
        const body = await response.json();
        examples = body.examples || [];
        pending = Boolean(body.pending);
      }
    } catch { /* no examples: the page works without them */ }
    if (pending && attempt < EXAMPLES_RETRIES) {
      examplesTimer = setTimeout(() => loadExamples(attempt + 1), Math.min(300 * (attempt + 1), 2000));
    }
    ui.exampleList.replaceChildren(...examples.map((ex) => h("li", {},
      h("button", {
        type: "button",
        class: "example-chip",
        testid: "example-chip",
        dataset: { docId: ex.doc_id, section: ex.section || "" },
        title: `From ${ex.title}${ex.section ? " › " + ex.section : ""}`,
        onclick: () => {
          ui.question.value = ex.question;
          autoGrow();
          ask(ex.question);
        },
      }, ex.question))));
    ui.examples.hidden = examples.length === 0;
  }

  // ---------------------------------------------------------------- questions asked in this tab

  function readHistory() {
    try {
      const list = JSON.parse(sessionStorage.getItem(HISTORY_STORAGE) || "[]");
      return Array.isArray(list) ? list : [];
    } catch {
      return [];
    }
  }

  function writeHistory(list) {
    // Drops the oldest entries until the list fits in the tab's storage.
    for (let keep = list.length; keep >= 0; keep -= 1) {
      try {
        sessionStorage.setItem(HISTORY_STORAGE, JSON.stringify(list.slice(0, keep)));
        return;
      } catch { /* quota: try with fewer */ }
    }
  }

  function outcome(state) {
    if (state.failed) return "error";
    if (state.reason === "conflicting_sources") return "sources disagree";
    if (state.reason) return "not answered";
    return `${state.emitted} sentence${state.emitted === 1 ? "" : "s"}`;
  }

  /** Saves a finished ask (its events, so it can be shown again exactly) at the top of the tab's list. */
  function remember(state) {
    const entry = {
      id: state.traceId || String(Date.now()),
      question: state.question,
      at: new Date().toISOString(),
      outcome: outcome(state),
      traceId: state.traceId,
      events: state.events,
      feedback: "",
    };
    state.historyId = entry.id;
    const list = [entry, ...readHistory().filter((e) => e.id !== entry.id)].slice(0, HISTORY_MAX);
    writeHistory(list);
    renderHistory();
  }

  function updateHistory(id, changes) {
    const list = readHistory();
    const entry = list.find((e) => e.id === id);
    if (!entry) return;
    Object.assign(entry, changes);
    writeHistory(list);
  }

  const TIME_FORMAT = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit" });

  function renderHistory() {
    const list = readHistory();
    ui.history.hidden = list.length === 0;
    ui.historyCount.textContent = String(list.length);
    const current = run && run.historyId;
    ui.historyList.replaceChildren(...list.map((entry) => {
      const when = new Date(entry.at);
      return h("li", {},
        h("button", {
          type: "button",
          class: "history-item",
          testid: "history-item",
          "aria-current": entry.id === current ? "true" : null,
          onclick: () => replay(entry.id),
        },
        h("span", { class: "history-question" }, entry.question),
        h("span", { class: "history-meta" },
          [Number.isNaN(when.getTime()) ? "" : TIME_FORMAT.format(when), entry.outcome,
            entry.feedback ? `marked ${entry.feedback}` : ""].filter(Boolean).join(" · "))));
    }));
  }

  /** Shows an earlier answer of this tab again, from its saved events (no new ask, no model call). */
  function replay(id) {
    const entry = readHistory().find((e) => e.id === id);
    if (!entry) return;
    if (run) run.controller.abort();
    if (conversation.turns.length) {
      conversation = newConversation();
      ui.thread.replaceChildren();
      ui.thread.hidden = true;
    }
    const state = newState(entry.question);
    state.replayed = true;
    state.traceId = entry.traceId || "";
    state.historyId = entry.id;
    state.feedback = entry.feedback || "";
    run = state;
    resetResult(entry.question);
    ui.question.value = entry.question;
    autoGrow();
    for (const ev of entry.events || []) handleEvent(state, ev);
    if (!state.done) state.failed = true;
    finish(state);
    ui.metaLine.textContent = [ui.metaLine.textContent, "shown again from earlier in this tab"].filter(Boolean).join(" · ");
    renderHistory();
    ui.asked.focus();
  }

  // ---------------------------------------------------------------- copy

  function answerForCopy(state) {
    return { question: state.question, sentences: state.sentences, blocks: state.blocks };
  }

  async function writeClipboard(text) {
    try {
      await navigator.clipboard.writeText(text);
      return true;
    } catch {
      // Older browsers or a denied permission: select a hidden textarea and copy that.
      const area = h("textarea", { class: "visually-hidden", "aria-hidden": "true", tabindex: "-1" });
      area.value = text;
      document.body.append(area);
      area.select();
      let ok = false;
      try { ok = document.execCommand("copy"); } catch { ok = false; }
      area.remove();
      return ok;
    }
  }

  async function copyAnswer(kind) {
    if (!run || !run.sentences.length) return;
    const answer = answerForCopy(run);
    const text = kind === "markdown" ? window.RagCopy.markdown(answer) : window.RagCopy.plainText(answer);
    const sources = window.RagCopy.footnotes(answer).notes.length;
    const ok = await writeClipboard(text);
    ui.copyStatus.textContent = ok
      ? `Copied the answer and ${sources} source${sources === 1 ? "" : "s"} as ${kind === "markdown" ? "Markdown" : "plain text"}.`
      : "Copying was blocked by the browser; select the answer and copy it instead.";
    ui.copyStatus.dataset.copied = ok ? kind : "";
  }

  // ---------------------------------------------------------------- feedback

  let verdict = "";

  function resetFeedback() {
    verdict = "";
    ui.feedback.hidden = true;
    ui.feedbackMore.hidden = true;
    ui.feedbackNote.value = "";
    ui.feedbackStatus.textContent = "";
    for (const button of ui.feedbackButtons) {
      button.disabled = false;
      button.setAttribute("aria-pressed", "false");
    }
  }

  function chooseVerdict(choice) {
    verdict = choice;
    for (const button of ui.feedbackButtons) {
      button.setAttribute("aria-pressed", button.dataset.verdict === choice ? "true" : "false");
    }
    ui.feedbackMore.hidden = false;
    ui.feedbackStatus.textContent = choice === "wrong"
      ? "Marked as wrong. Add a note if you can, then send."
      : "Marked as helpful. Add a note if you like, then send.";
    ui.feedbackNote.focus();
  }

  function showFeedbackSent(choice) {
    for (const button of ui.feedbackButtons) {
      button.disabled = true;
      button.setAttribute("aria-pressed", button.dataset.verdict === choice ? "true" : "false");
    }
    ui.feedbackMore.hidden = true;
    ui.feedbackStatus.textContent = `Thank you: this answer is marked ${choice}, and the people who keep the documents can see it.`;
    ui.feedbackStatus.dataset.sent = choice;
  }

  async function sendFeedback() {
    const state = run;
    if (!state || !state.traceId || !verdict) return;
    const body = { trace_id: state.traceId, verdict, note: ui.feedbackNote.value.trim(), question: state.question };
    ui.feedbackStatus.textContent = "Sending…";
    try {
      const response = await fetch("/feedback", {
        method: "POST",
        headers: authHeaders({ "Content-Type": "application/json", Accept: "application/json" }),
        body: JSON.stringify(body),
      });
      if (!response.ok) {
        const err = await readError(response);
        ui.feedbackStatus.textContent = `Your feedback was not saved: ${err.message}`;
        return;
      }
    } catch {
      ui.feedbackStatus.textContent = "Your feedback was not saved: the service could not be reached.";
      return;
    }
    state.feedback = body.verdict;
    if (state.historyId) updateHistory(state.historyId, { feedback: body.verdict });
    if (run === state) showFeedbackSent(body.verdict);
    renderHistory();
  }

  // ---------------------------------------------------------------- wiring

  function autoGrow() {
    ui.question.style.height = "auto";
    ui.question.style.height = Math.min(ui.question.scrollHeight, 220) + "px";
  }

  ui.form.addEventListener("submit", (e) => {
    e.preventDefault();
    const question = ui.question.value.trim();
    if (!question) {
      ui.question.focus();
      return;
    }
    ask(question);
  });

  ui.question.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      ui.form.requestSubmit();
    }
  });
  ui.question.addEventListener("input", autoGrow);

  ui.followupForm.addEventListener("submit", (e) => {
    e.preventDefault();
    const question = ui.followup.value.trim();
    if (!question) {
      ui.followup.focus();
      return;
    }
    ui.followup.value = "";
    askFollowUp(question);
  });
  ui.followup.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      ui.followupForm.requestSubmit();
    }
  });
  ui.newConversation.addEventListener("click", startConversation);

  ui.apiKey.value = apiKey();
  ui.apiKey.form.addEventListener("submit", (e) => e.preventDefault());
  ui.apiKey.addEventListener("change", () => {
    try {
      const value = ui.apiKey.value.trim();
      if (value) localStorage.setItem(KEY_STORAGE, value);
      else localStorage.removeItem(KEY_STORAGE);
    } catch { /* storage disabled: the key lasts for this page only */ }
    chunkCache.clear();
    loadStatus();
    loadExamples();
  });

  ui.panelClose.addEventListener("click", () => closePanel(true));
  ui.sourceView.addEventListener("click", () => {
    plainView = !plainView;
    if (panelShown) {
      renderChunkText(panelShown.text, panelShown.ranges);
      scrollPanelTo(ui.sourceText.querySelector("mark"));
    }
  });
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && !ui.panel.hidden) closePanel(true);
  });

  async function loadStatus() {
    try {
      const response = await fetch("/readyz", { headers: authHeaders({ Accept: "application/json" }) });
      if (response.status === 401) {
        ui.kbStatus.textContent = "API key required";
        return;
      }
      const body = await response.json();
      const chunks = typeof body.chunks === "number" ? body.chunks
        : body.store && typeof body.store.chunks === "number" ? body.store.chunks : null;
      if (!response.ok) ui.kbStatus.textContent = "not ready";
      else if (body.status === "empty" || chunks === 0) ui.kbStatus.textContent = "no documents indexed yet";
      else ui.kbStatus.textContent = chunks === null ? "ready" : `${chunks.toLocaleString()} passages indexed`;
      showEmbedding(response.ok ? body.embedding : null);
    } catch {
      ui.kbStatus.textContent = "";
    }
  }

  // Dense retrieval's progress while the server embeds passages in the background: a small line
  // beside the passage count, refreshed until every passage is embedded (then it goes away).
  const EMBED_POLL_MS = 5000;
  function showEmbedding(embedding) {
    const pending = embedding && embedding.total > 0 && embedding.state !== "done";
    ui.embedStatus.hidden = !pending;
    if (!pending) {
      ui.embedStatus.textContent = "";
      return;
    }
    const done = `${embedding.embedded.toLocaleString()} of ${embedding.total.toLocaleString()}`;
    ui.embedStatus.textContent = embedding.state === "failed"
      ? "meaning search unavailable: matching words only"
      : `meaning search: ${done} passages ready`;
    ui.embedStatus.title = embedding.state === "failed" ? embedding.error
      : "Answers use words now, and meaning for the passages embedded so far.";
    setTimeout(loadStatus, EMBED_POLL_MS);
  }

  ui.copyText.addEventListener("click", () => copyAnswer("text"));
  ui.copyMarkdown.addEventListener("click", () => copyAnswer("markdown"));
  for (const button of ui.feedbackButtons) {
    button.addEventListener("click", () => chooseVerdict(button.dataset.verdict));
  }
  ui.feedback.addEventListener("submit", (e) => {
    e.preventDefault();
    sendFeedback();
  });

  loadStatus();
  loadExamples();
  renderHistory();
  ui.question.focus();

  // Exposed for debugging and tests: the last run's counters.
  window.ragPage = { ask, openSource, replay, get run() { return run; } };
})();
