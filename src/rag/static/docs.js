/* The API reference at /docs: fetches /openapi.json and renders each operation with DOM nodes
   (never innerHTML). Uses the API key the ask page stored in this browser, when there is one. */
(function () {
  "use strict";

  const KEY_STORAGE = "rag.apiKey";
  const root = document.getElementById("api");
  const status = document.getElementById("api-status");

  function h(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (name === "class") node.className = value;
      else if (name === "testid") node.dataset.testid = value;
      else node.setAttribute(name, String(value));
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function apiKey() {
    try { return (localStorage.getItem(KEY_STORAGE) || "").trim(); } catch { return ""; }
  }

  function resolve(spec, schema) {
    let seen = 0;
    while (schema && schema.$ref && seen < 20) {
      const name = schema.$ref.split("/").pop();
      schema = (spec.components && spec.components.schemas && spec.components.schemas[name]) || {};
      seen += 1;
    }
    return schema || {};
  }

  function typeName(spec, schema) {
    if (!schema) return "";
    if (schema.$ref) return schema.$ref.split("/").pop();
    if (schema.anyOf) return schema.anyOf.map((s) => typeName(spec, s)).join(" | ");
    if (schema.type === "array") return typeName(spec, schema.items) + "[]";
    if (schema.enum) return schema.enum.map((v) => JSON.stringify(v)).join(" | ");
    return schema.type || "";
  }

  function example(schema) {
    if (!schema) return undefined;
    if (Array.isArray(schema.examples) && schema.examples.length) return schema.examples[0];
    return schema.example;
  }

  function fields(spec, schema) {
    const resolved = resolve(spec, schema);
    const props = resolved.properties || {};
    const required = new Set(resolved.required || []);
    const names = Object.keys(props);
    if (!names.length) return null;
    return h("table", {},
      h("tr", {}, h("th", {}, "field"), h("th", {}, "type"), h("th", {}, "description")),
      names.map((name) => h("tr", {},
        h("td", {}, h("code", {}, name), required.has(name) ? " *" : ""),
        h("td", {}, typeName(spec, props[name])),
        h("td", {}, props[name].description || ""))));
  }

  function body(spec, label, content) {
    if (!content) return [];
    const out = [];
    for (const [media, entry] of Object.entries(content)) {
      const schema = entry.schema || {};
      out.push(h("p", {}, label, " (", h("code", {}, media), "): ", typeName(spec, schema)));
      const table = fields(spec, schema);
      if (table) out.push(table);
      const sample = entry.example !== undefined ? entry.example : example(resolve(spec, schema));
      if (sample !== undefined) {
        out.push(h("pre", {}, typeof sample === "string" ? sample : JSON.stringify(sample, null, 2)));
      }
    }
    return out;
  }

  function operation(spec, path, method, op) {
    const params = op.parameters || [];
    return h("section", { class: "op", testid: "docs-operation" },
      h("div", { class: "op-head" },
        h("span", { class: "method method-" + method }, method),
        h("span", { class: "path" }, path),
        h("span", { class: "op-summary" }, op.summary || "")),
      op.description ? h("p", {}, op.description) : null,
      params.length ? [h("h3", {}, "Parameters"), h("table", {},
        h("tr", {}, h("th", {}, "name"), h("th", {}, "in"), h("th", {}, "type"), h("th", {}, "description")),
        params.map((p) => h("tr", {},
          h("td", {}, h("code", {}, p.name), p.required ? " *" : ""),
          h("td", {}, p.in),
          h("td", {}, typeName(spec, p.schema)),
          h("td", {}, p.description || ""))))] : null,
      op.requestBody ? [h("h3", {}, "Request body"), body(spec, "Body", op.requestBody.content)] : null,
      h("h3", {}, "Responses"),
      Object.entries(op.responses || {}).map(([code, r]) => [
        h("p", {}, h("strong", {}, code), " ", r.description || ""),
        code === "200" ? body(spec, "Returns", r.content) : null,
      ]));
  }

  function render(spec) {
    const info = spec.info || {};
    document.getElementById("api-title").textContent = (info.title || "API") + " " + (info.version || "");
    document.getElementById("api-summary").textContent = [info.summary, info.description].filter(Boolean).join("\n\n");
    root.replaceChildren();
    for (const [path, methods] of Object.entries(spec.paths || {})) {
      for (const [method, op] of Object.entries(methods)) root.append(operation(spec, path, method, op));
    }
  }

  async function load() {
    const headers = { Accept: "application/json" };
    const key = apiKey();
    if (key) headers.Authorization = "Bearer " + key;
    try {
      const response = await fetch("/openapi.json", { headers });
      if (response.status === 401) {
        status.textContent = "This service needs an API key: set it under Settings on the ask page, then reload.";
        status.className = "docs-note error";
        return;
      }
      if (!response.ok) throw new Error("HTTP " + response.status);
      render(await response.json());
    } catch (err) {
      status.textContent = "Could not load /openapi.json (" + err.message + ").";
      status.className = "docs-note error";
    }
  }

  load();
})();
