/* Light Markdown and reStructuredText rendering for the source panel, with exact source offsets.
 *
 * parse(text) returns blocks (heading, paragraph, list item, quote, code, table) whose inline
 * nodes are either visible text, a contiguous slice text[s, e) of the ORIGINAL chunk, or an
 * element (strong, em, code, link) holding such nodes. Markup characters (`**`, `#`, the URL of a
 * link, a reST underline, a table's pipes and delimiter row) are simply not in any slice. So a highlight given as source offsets lands
 * on exactly the cited characters that are visible, whatever the markup around them.
 *
 * Safe by construction: nothing is ever parsed as HTML. render() builds elements from a fixed
 * set of tags and sets text through text nodes; links are shown as text, never followed.
 */
"use strict";

(() => {
  // Block starts, tried on one line (without its newline).
  const FENCE = /^ {0,3}(```+|~~~+)/;
  const ATX = /^ {0,3}(#{1,6})[ \t]+/;
  const ATX_TAIL = /[ \t]+#+[ \t]*$/;
  const UNDERLINE = /^([=\-~^"'`#*+:.])\1{2,}[ \t]*$/;
  const BULLET = /^([ \t]*)([-*+•]|\d{1,3}[.)]|#\.)[ \t]+(?=\S)/;
  const QUOTE = /^ {0,3}>[ \t]?/;
  const DOCTEST = /^ {0,3}>>>(?:[ \t]|$)/; // a reST doctest block (before QUOTE: ">>>" is no quote)
  const DIRECTIVE = /^\.\. /;
  // Directives whose indented body is code, shown as such (after its option lines).
  const CODE_DIRECTIVE = /^\.\.[ \t]+(?:code-block|code|sourcecode|doctest|testcode|testoutput|testsetup|parsed-literal)::/;
  const DIRECTIVE_OPTION = /^[ \t]+:[\w-]+:/;
  // A reST field name at the start of a line (":Default: 30"), not a role (":setting:`x`").
  const FIELD_NAME = /^:([A-Za-z][\w .-]*):(?!`)[ \t]+/;
  // A table row: a line that starts and ends with a pipe (Markdown/GFM, and the DOCX reader's tables).
  const TABLE_ROW = /^[ \t]*\|.*\|[ \t]*$/;
  const TABLE_DELIMITER = /^[ \t]*\|?(?:[ \t]*:?-+:?[ \t]*\|)+(?:[ \t]*:?-+:?[ \t]*)?[ \t]*$/;

  // Inline patterns, tried in this order at the earliest position. Each names the group that
  // stays visible (`show`) and the element it becomes.
  const INLINE = [
    { re: /``([^`]+?)``/dg, tag: "code", show: 1 },                            // reST literal
    { re: /:[A-Za-z][\w.+-]*:`([^`]+)`/dg, tag: "code", show: 1 },              // reST role
    { re: /`([^`<]+?)\s*<([^`>]+)>`__?/dg, tag: "link", show: 1 },              // reST hyperlink
    { re: /`([^`]+)`__?/dg, tag: "link", show: 1 },                             // reST reference
    { re: /`([^`\n]+)`/dg, tag: "code", show: 1 },                              // Markdown code / reST text
    { re: /!\[([^\]\n]*)\]\([^)\s]+(?:\s+"[^"\n]*")?\)/dg, tag: "link", show: 1 },  // image: its alt text
    { re: /\[([^\]\n]+)\]\([^)\s]+(?:\s+"[^"\n]*")?\)/dg, tag: "link", show: 1 },   // Markdown link
    { re: /<((?:https?|mailto):[^>\s]+)>/dg, tag: "link", show: 1 },            // autolink
    { re: /\*\*(?=\S)([\s\S]*?\S)\*\*/dg, tag: "strong", show: 1, nest: true },
    { re: /(?<![\w_])__(?=\S)([\s\S]*?\S)__(?![\w_])/dg, tag: "strong", show: 1, nest: true },
    { re: /(?<![\w*])\*(?=[^\s*])([\s\S]*?[^\s*])\*(?![\w*])/dg, tag: "em", show: 1, nest: true },
    { re: /(?<![\w_])_(?=[^\s_])([\s\S]*?[^\s_])_(?![\w_])/dg, tag: "em", show: 1, nest: true },
  ];

  /** [[start, end], ...] of every line (end excludes the newline). */
  function lines(text) {
    const out = [];
    let at = 0;
    for (;;) {
      const nl = text.indexOf("\n", at);
      if (nl === -1) {
        out.push([at, text.length]);
        return out;
      }
      out.push([at, nl]);
      at = nl + 1;
    }
  }

  /** Inline nodes for text[s, e): {text: [s, e]} or {tag, children}. */
  function inline(text, s, e) {
    const nodes = [];
    let at = s;
    while (at < e) {
      let best = null;
      for (const rule of INLINE) {
        rule.re.lastIndex = at;
        const m = rule.re.exec(text);
        if (!m || m.index + m[0].length > e) continue;
        if (!best || m.index < best.m.index) best = { rule, m };
      }
      if (!best) break;
      const { rule, m } = best;
      const [innerAt, innerEnd] = m.indices[rule.show];
      if (m.index > at) nodes.push({ text: [at, m.index] });
      const children = rule.nest ? inline(text, innerAt, innerEnd) : [{ text: [innerAt, innerEnd] }];
      nodes.push({ tag: rule.tag, children });
      at = m.index + m[0].length;
    }
    if (at < e) nodes.push({ text: [at, e] });
    return nodes;
  }

  function isBlank(text, [s, e]) {
    return !text.slice(s, e).trim();
  }

  /** The cells of the table row text[s, e) as inline nodes, each cell without its pipes and padding. */
  function tableCells(text, s, e) {
    const row = text.slice(s, e);
    const first = row.indexOf("|");
    const last = row.lastIndexOf("|");
    const cells = [];
    let from = first + 1;
    for (let k = first + 1; k <= last; k += 1) {
      if (row[k] !== "|" || row[k - 1] === "\\") continue;
      const cell = row.slice(from, k);
      const lead = cell.length - cell.trimStart().length;
      const body = cell.trim();
      // An escaped pipe (backslash, pipe) shows as a pipe: the backslash is in no slice.
      const nodes = [];
      let at = s + from + lead;
      const cellEnd = at + body.length;
      for (let b = text.indexOf("\\|", at); b !== -1 && b < cellEnd; b = text.indexOf("\\|", b + 2)) {
        nodes.push(...inline(text, at, b));
        at = b + 1;
      }
      if (at < cellEnd) nodes.push(...inline(text, at, cellEnd));
      cells.push(nodes);
      from = k + 1;
    }
    return cells;
  }

  /** The blocks of `text`: {type, level?, inlines} with offsets into `text`. */
  function parse(text) {
    const ls = lines(text);
    const blocks = [];
    let i = 0;
    const line = (k) => text.slice(ls[k][0], ls[k][1]);
    const startsBlock = (k) => {
      const l = line(k);
      return FENCE.test(l) || ATX.test(l) || BULLET.test(l) || QUOTE.test(l) || UNDERLINE.test(l) || TABLE_ROW.test(l);
    };
    let literalNext = false; // the previous paragraph ended in "::" (reST literal block follows)
    while (i < ls.length) {
      const [s, e] = ls[i];
      const l = line(i);
      if (isBlank(text, ls[i])) {
        i += 1;
        continue;
      }
      const fence = FENCE.exec(l);
      if (fence) {
        let j = i + 1;
        while (j < ls.length && !line(j).trimStart().startsWith(fence[1])) j += 1;
        if (j > i + 1) blocks.push({ type: "code", inlines: [{ text: [ls[i + 1][0], ls[j - 1][1]] }] });
        i = j + 1;
        literalNext = false;
        continue;
      }
      if (literalNext && /^[ \t]/.test(l)) {
        let j = i;
        while (j + 1 < ls.length && (isBlank(text, ls[j + 1]) || /^[ \t]/.test(line(j + 1)))) j += 1;
        while (j > i && isBlank(text, ls[j])) j -= 1;
        blocks.push({ type: "code", inlines: [{ text: [s, ls[j][1]] }] });
        i = j + 1;
        literalNext = false;
        continue;
      }
      literalNext = false;
      if (DOCTEST.test(l)) { // runs to the next blank line, output lines included
        let j = i;
        while (j + 1 < ls.length && !isBlank(text, ls[j + 1])) j += 1;
        blocks.push({ type: "code", inlines: [{ text: [s + l.search(/\S/), ls[j][1]] }] });
        i = j + 1;
        continue;
      }
      if (TABLE_ROW.test(l)) {
        const rows = [];
        let header = false;
        let j = i;
        for (; j < ls.length && TABLE_ROW.test(line(j)); j += 1) {
          if (TABLE_DELIMITER.test(line(j))) {
            if (j === i + 1) header = true; // a delimiter under the first row: that row is the header
            continue;
          }
          rows.push({ header: false, cells: tableCells(text, ls[j][0], ls[j][1]) });
        }
        if (header && rows.length) rows[0].header = true;
        const inlines = rows.flatMap((r) => r.cells.flat());
        blocks.push({ type: "table", rows, inlines });
        i = j;
        continue;
      }
      const atx = ATX.exec(l);
      if (atx) {
        const tail = ATX_TAIL.exec(l);
        const end = tail && tail.index > atx[0].length ? s + tail.index : e;
        blocks.push({ type: "heading", level: atx[1].length, inlines: inline(text, s + atx[0].length, end) });
        i += 1;
        continue;
      }
      // reST overline + title + underline, or Markdown/reST title + underline.
      if (UNDERLINE.test(l) && i + 2 < ls.length && UNDERLINE.test(line(i + 2)) && !isBlank(text, ls[i + 1])) {
        const [ts, te] = ls[i + 1];
        const lead = text.slice(ts, te).search(/\S/);
        blocks.push({ type: "heading", level: 1, inlines: inline(text, ts + lead, te) });
        i += 3;
        continue;
      }
      if (UNDERLINE.test(l)) { // a transition / horizontal rule: nothing to show
        i += 1;
        continue;
      }
      if (i + 1 < ls.length && UNDERLINE.test(line(i + 1)) && !BULLET.test(l)
          && line(i + 1).trim().length >= Math.min(3, l.trim().length)) {
        const lead = l.search(/\S/);
        const level = "=#*".includes(line(i + 1).trim()[0]) ? 2 : 3;
        blocks.push({ type: "heading", level, inlines: inline(text, s + lead, s + l.trimEnd().length) });
        i += 2;
        continue;
      }
      if (CODE_DIRECTIVE.test(l)) { // the directive line and its options; the indented body is code
        let j = i;
        while (j + 1 < ls.length && DIRECTIVE_OPTION.test(line(j + 1))) j += 1;
        blocks.push({ type: "directive", ordered: false, inlines: inline(text, s, ls[j][1]) });
        literalNext = true;
        i = j + 1;
        continue;
      }
      const bullet = BULLET.exec(l);
      const quote = !bullet && QUOTE.exec(l);
      const contentAt = s + (bullet ? bullet[0].length : quote ? quote[0].length : l.search(/\S/)); // indentation is not shown
      let j = i;
      while (j + 1 < ls.length && !isBlank(text, ls[j + 1]) && !startsBlock(j + 1)) j += 1;
      // Quote continuation lines carry their own ">": show each line's content only.
      if (quote) {
        const parts = [];
        for (let k = i; k <= j; k += 1) {
          const q = QUOTE.exec(line(k));
          const at = ls[k][0] + (q ? q[0].length : 0);
          if (parts.length) parts.push({ text: [ls[k - 1][1], ls[k - 1][1] + 1] });
          parts.push(...inline(text, at, ls[k][1]));
        }
        blocks.push({ type: "quote", inlines: parts });
      } else {
        let end = ls[j][1];
        const type = bullet ? "item" : DIRECTIVE.test(l) ? "directive" : "paragraph";
        // reST: a paragraph ending in "::" introduces a literal block and is shown with one colon
        // ("Example::" -> "Example:"), or with none after a space ("Run this: ::" -> "Run this:").
        // A lone "::" is not shown at all.
        const literal = type === "paragraph" && /::[ \t]*$/.test(text.slice(s, end));
        if (literal) {
          const shown = text.slice(contentAt, end).trimEnd().slice(0, -1); // without the last colon
          end = contentAt + (/(^|\s):$/.test(shown) ? shown.slice(0, -1).trimEnd().length : shown.length);
        }
        if (end > contentAt) {
          blocks.push({ type, ordered: Boolean(bullet && /\d|#/.test(bullet[2])), inlines: inline(text, contentAt, end) });
        }
        literalNext = Boolean(literal);
      }
      i = j + 1;
    }
    return blocks;
  }

  const TAGS = { strong: "strong", em: "em", code: "code", link: "span" };

  /** A function that appends inline nodes to an element, wrapping the parts of `ranges` in marks. */
  function filler(text, ranges, markAttrs, counts) {
    const slice = (s, e, parent) => {
      let at = s;
      for (let r = 0; r < ranges.length && at < e; r += 1) {
        const [rs, re] = ranges[r];
        if (re <= at || rs >= e) continue;
        const from = Math.max(rs, at);
        const to = Math.min(re, e);
        if (from > at) parent.append(document.createTextNode(text.slice(at, from)));
        const mark = document.createElement("mark");
        mark.dataset.start = String(from);
        mark.dataset.end = String(to);
        mark.dataset.span = String(r);
        for (const [k, v] of Object.entries(markAttrs || {})) mark.dataset[k] = v;
        mark.textContent = text.slice(from, to);
        parent.append(mark);
        counts[r] += 1;
        at = to;
      }
      if (at < e) parent.append(document.createTextNode(text.slice(at, e)));
    };
    const fill = (nodes, parent) => {
      for (const node of nodes) {
        if (node.text) {
          slice(node.text[0], node.text[1], parent);
          continue;
        }
        const el = document.createElement(TAGS[node.tag] || "span");
        if (node.tag === "link") el.className = "md-link";
        fill(node.children, el);
        parent.append(el);
      }
    };
    return fill;
  }

  /** One answer sentence (copied from a source, so it may carry the source's inline markup) shown
   * with that markup rendered: a literal as code, a link as its text, a reST field name
   * (":Default:") as a label. Nothing is parsed as HTML. */
  function renderInline(container, text) {
    const field = FIELD_NAME.exec(text);
    let at = 0;
    if (field) {
      const label = document.createElement("span");
      label.className = "md-field";
      label.textContent = `${field[1]}:`;
      container.append(label, " ");
      at = field[0].length;
    }
    filler(text, [], null, [])(inline(text, at, text.length), container);
  }

  /**
   * Renders `text` into `container`, wrapping the visible characters inside `ranges`
   * ([[start, end], ...], sorted, disjoint source offsets) in <mark data-start data-end data-span>.
   * Returns the number of marks made for each range (0 means nothing of it is visible).
   */
  function render(container, text, ranges, markAttrs) {
    const counts = ranges.map(() => 0);
    const fill = filler(text, ranges, markAttrs, counts);
    const blocks = parse(text);
    let list = null;
    for (const block of blocks) {
      let el;
      if (block.type === "item") {
        const kind = block.ordered ? "ol" : "ul";
        if (!list || list.localName !== kind) {
          list = document.createElement(kind);
          container.append(list);
        }
        el = document.createElement("li");
        list.append(el);
      } else if (block.type === "table") {
        list = null;
        const table = document.createElement("table");
        table.className = "md-table";
        for (const row of block.rows) {
          const tr = document.createElement("tr");
          for (const cell of row.cells) {
            const td = document.createElement(row.header ? "th" : "td");
            if (row.header) td.scope = "col";
            fill(cell, td);
            tr.append(td);
          }
          table.append(tr);
        }
        container.append(table);
        continue;
      } else {
        list = null;
        if (block.type === "heading") {
          el = document.createElement("p");
          el.className = "md-heading md-h" + Math.min(block.level, 4);
        } else if (block.type === "code") {
          el = document.createElement("pre");
        } else if (block.type === "quote") {
          el = document.createElement("blockquote");
        } else {
          el = document.createElement("p");
          if (block.type === "directive") el.className = "md-directive";
        }
        container.append(el);
      }
      fill(block.inlines, el);
    }
    return counts;
  }

  /** The visible text of `text` once rendered (for copying and tests). */
  function visibleText(text) {
    const out = [];
    const walk = (nodes) => {
      for (const n of nodes) {
        if (n.text) out.push(text.slice(n.text[0], n.text[1]));
        else walk(n.children);
      }
    };
    for (const block of parse(text)) {
      if (block.type === "table") {
        for (const row of block.rows) {
          row.cells.forEach((cell, k) => {
            if (k) out.push("\t");
            walk(cell);
          });
          out.push("\n");
        }
        continue;
      }
      walk(block.inlines);
      out.push("\n");
    }
    return out.join("");
  }

  window.RagMarkup = { parse, render, renderInline, visibleText };
})();
