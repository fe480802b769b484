/* The answer with its citations as text to paste elsewhere: plain text with numbered footnotes, or Markdown.
 *
 * Input: {question, sentences: [{text, starts, citations: [{n, chunk_id, title, url, link,
 * chunk_url, cited_text, page}]}], blocks: Map n -> {section, updated_at}}. Footnotes are
 * numbered 1..k in order of first citation, one per cited chunk (a chunk cited by several
 * sentences, or under several block numbers, is one footnote quoting each distinct span once).
 * Pure functions, no DOM: tested in the page through window.RagCopy.
 */
"use strict";

(() => {
  /** Footnotes in order of first citation, and per sentence the footnote numbers it cites. */
  function footnotes(answer) {
    const byChunk = new Map();
    const perSentence = [];
    for (const sentence of answer.sentences || []) {
      const numbers = [];
      for (const c of sentence.citations || []) {
        let note = byChunk.get(c.chunk_id);
        if (!note) {
          const block = (answer.blocks && answer.blocks.get(c.n)) || {};
          note = {
            number: byChunk.size + 1,
            title: c.title || block.title || c.chunk_id,
            section: block.section && block.section !== (c.title || block.title) ? block.section : "",
            updated: block.updated_at || "",
            page: Number.isInteger(c.page) ? c.page : null,
            link: absolute(c.url || c.chunk_url || c.link || ""),
            quotes: [],
          };
          byChunk.set(c.chunk_id, note);
        }
        const quote = oneLine(c.cited_text || "");
        if (quote && !note.quotes.includes(quote)) note.quotes.push(quote);
        if (!numbers.includes(note.number)) numbers.push(note.number);
      }
      perSentence.push(numbers.sort((a, b) => a - b));
    }
    return { notes: [...byChunk.values()], perSentence };
  }

  function absolute(link) {
    if (!link) return "";
    try {
      const url = new URL(link, globalThis.location ? globalThis.location.href : "http://localhost/");
      return url.protocol === "http:" || url.protocol === "https:" ? url.href : "";
    } catch {
      return "";
    }
  }

  function oneLine(text) {
    return String(text).replace(/\s+/g, " ").trim();
  }

  /** Paragraphs and list items of the answer, each a list of [sentence text, footnote numbers]. */
  function layout(answer, perSentence) {
    const parts = [];
    (answer.sentences || []).forEach((s, i) => {
      const piece = [oneLine(s.text || ""), perSentence[i]];
      const last = parts[parts.length - 1];
      if (s.starts === "item") parts.push({ item: true, pieces: [piece] });
      else if (s.starts === "numbered") parts.push({ item: true, number: s.number || 1, pieces: [piece] });
      else if (s.starts === "header" || s.starts === "row") {
        parts.push({ row: true, header: s.starts === "header", cells: s.cells || [], pieces: [piece] });
      } else if (s.starts === "paragraph" || !last || last.item || last.row) {
        parts.push({ item: false, pieces: [piece] });
      } else last.pieces.push(piece);
    });
    return parts;
  }

  function joinParts(parts, marker) {
    const out = [];
    parts.forEach((part, i) => {
      const line = part.pieces.map(([text, ns]) => text + ns.map(marker).join("")).join(" ");
      const prev = parts[i - 1];
      if (i > 0) out.push((part.item && prev.item) || (part.row && prev.row) ? "\n" : "\n\n");
      if (part.row) {
        const ns = part.pieces.flatMap(([, n]) => n).map(marker).join("");
        out.push("| " + part.cells.join(" | ") + " |" + ns);
        if (part.header) out.push("\n|" + part.cells.map(() => "---|").join(""));
      } else if (part.item) out.push((part.number ? part.number + ". " : "- ") + line);
      else out.push(line);
    });
    return out.join("");
  }

  function facts(note) {
    return [note.section, note.page !== null ? `page ${note.page}` : "", note.updated ? `updated ${note.updated}` : ""]
      .filter(Boolean).join(", ");
  }

  /** Plain text: the question, the answer with [1]-style markers, then "Sources" with quotes and links. */
  function plainText(answer) {
    const { notes, perSentence } = footnotes(answer);
    const body = joinParts(layout(answer, perSentence), (n) => `[${n}]`);
    const lines = [oneLine(answer.question || ""), "", body];
    if (notes.length) {
      lines.push("", "Sources:");
      for (const note of notes) {
        const about = facts(note);
        lines.push(`[${note.number}] ${note.title}${about ? " (" + about + ")" : ""}`);
        for (const quote of note.quotes) lines.push(`    "${quote}"`);
        if (note.link) lines.push(`    ${note.link}`);
      }
    }
    return lines.join("\n").replace(/^\n+/, "") + "\n";
  }

  function mdEscape(text) {
    return String(text).replace(/([\\`*_[\]<>#|])/g, "\\$1");
  }

  /** Markdown: the question in bold, the answer with [^1] footnote references, then the footnotes. */
  function markdown(answer) {
    const { notes, perSentence } = footnotes(answer);
    const parts = layout(answer, perSentence).map((part) => ({
      item: part.item,
      pieces: part.pieces.map(([text, ns]) => [mdEscape(text), ns]),
    }));
    const body = joinParts(parts, (n) => `[^${n}]`);
    const out = [];
    if (answer.question) out.push(`**${mdEscape(oneLine(answer.question))}**`, "");
    out.push(body);
    if (notes.length) out.push("");
    for (const note of notes) {
      const title = note.link ? `[${mdEscape(note.title)}](<${note.link}>)` : mdEscape(note.title);
      const about = facts(note);
      const quotes = note.quotes.map((q) => `“${mdEscape(q)}”`).join(" … ");
      out.push(`[^${note.number}]: ${title}${about ? ", " + about : ""}${quotes ? ": " + quotes : ""}`);
    }
    return out.join("\n") + "\n";
  }

  globalThis.RagCopy = { plainText, markdown, footnotes };
})();
