// The memory browser: plain JavaScript over the public Connect JSON API of this server (the
// same POST /himga.memory.v1.MemoryService/METHOD a curl call makes), with the token as
// "Authorization: Bearer" when one is typed. No build step.
//
// Every call that fails is shown at the top of the page with its method, status and message
// (a stopped server too); every list that can be empty says why and what to do; the message
// and episode lists page both ways, and a delete keeps the page it was made on.
"use strict";

const $ = (id) => document.getElementById(id);

// Connect's code for an HTTP status when the answer carries none (the Connect protocol's table).
const CODE_OF_STATUS = { 400: "internal", 401: "unauthenticated", 403: "permission_denied",
  404: "unimplemented", 429: "unavailable", 502: "unavailable", 503: "unavailable",
  504: "unavailable" };

class CallError extends Error {
  constructor(method, code, status, message) {
    super(message);
    this.method = method;
    this.code = code;
    this.status = status;
  }

  toString() {
    const status = this.status ? ` (HTTP ${this.status})` : "";
    return `${this.method}: ${this.code}${status}: ${this.message}`;
  }
}

function showError(error) {
  $("error-text").textContent = error instanceof CallError
    ? String(error) : `the page failed: ${error.message ?? error}`;
  $("error").hidden = false;
}

function clearError() {
  $("error-text").textContent = "";
  $("error").hidden = true;
}
$("error-dismiss").addEventListener("click", clearError);

// One call; a failure is shown (unless its code is one of `expected`) and thrown.
async function call(service, method, body, expected = []) {
  const headers = { "Content-Type": "application/json" };
  const token = $("token").value.trim();
  if (token) headers.Authorization = `Bearer ${token}`;
  let answer;
  try {
    answer = await fetch(`/himga.memory.v1.${service}/${method}`, {
      method: "POST", headers, body: JSON.stringify(body),
    });
  } catch (error) {
    const failed = new CallError(method, "unavailable", 0,
      `no answer from the server: it may be stopped or unreachable (${error.message})`);
    showError(failed);
    throw failed;
  }
  const text = await answer.text();
  let json = null;
  try { json = text ? JSON.parse(text) : {}; } catch { json = null; }
  if (!answer.ok || json === null) {
    const code = json?.code ?? CODE_OF_STATUS[answer.status] ?? "unknown";
    const message = json?.message
      ?? (text.trim().slice(0, 200) || answer.statusText || "the answer said nothing more");
    const failed = new CallError(method, code, answer.status, message);
    if (!expected.includes(code)) showError(failed);
    throw failed;
  }
  return json;
}

// A user's action: the banner shows what failed in it (and is cleared when it starts).
function action(run) {
  return async (event) => {
    event?.preventDefault?.();
    clearError();
    try {
      await run(event);
    } catch (error) {
      if (!(error instanceof CallError)) showError(error);
    }
  };
}

function cell(tr, label, content) {
  const td = document.createElement("td");
  td.dataset.label = label;
  if (content instanceof Node) td.append(content); else td.textContent = content ?? "";
  tr.append(td);
  return td;
}

// The column of each table whose text runs long (and wraps); the others are short: ids, names,
// times, kept on one line where the window is wide.
const LONG = { hits: 5, messages: 4, episodes: 4 };

// Fills `table` with one row per item: `cells(item)` gives the texts, `extra(item)` buttons.
function fill(table, items, cells, extra) {
  const labels = [...$(table).querySelectorAll("thead th")].map((th) => th.textContent);
  const rows = items.map((item) => {
    const tr = document.createElement("tr");
    cells(item).forEach((text, i) => {
      cell(tr, labels[i], text).className = i === LONG[table] ? "long" : "short";
    });
    if (extra) {
      const td = cell(tr, "", "");
      td.className = "actions";
      td.append(...extra(item));
    }
    return tr;
  });
  $(table).querySelector("tbody").replaceChildren(...rows);
}

function empty(id, text) {
  $(id).textContent = text ?? "";
  $(id).hidden = !text;
}

function button(label, onClick) {
  const b = document.createElement("button");
  b.type = "button";
  b.textContent = label;
  b.addEventListener("click", onClick);
  return b;
}

const namespace = () => $("namespace").value.trim();
const pageSize = () => Number($("page-size").value) || 20;
const quoted = (text) => `\u201c${text}\u201d`;

// A list read page by page with page tokens: the tokens of the pages seen so far, so Previous
// goes back exactly, and `reload` shows the same page again (after a delete).
class Pager {
  constructor(name, load) {
    this.name = name;
    this.load = load; // (page_token) -> the next page's token
    this.tokens = [""];
    this.index = 0;
    this.next = "";
    this.shown = false;
    $(`${name}-previous`).addEventListener("click", action(() => this.move(-1)));
    $(`${name}-next`).addEventListener("click", action(() => this.move(1)));
  }

  async first() {
    this.tokens = [""];
    this.index = 0;
    await this.show();
  }

  async move(step) {
    const index = this.index + step;
    if (index < 0 || (step > 0 && !this.next)) return;
    if (step > 0) this.tokens.splice(index, Infinity, this.next);
    const was = this.index;
    this.index = index;
    try {
      await this.show();
    } catch (error) {
      this.index = was;
      throw error;
    }
  }

  async reload() {
    const rows = await this.show();
    if (rows === 0 && this.index > 0) await this.move(-1); // its last row went: the page before
  }

  async show() {
    const { next, rows } = await this.load(this.tokens[this.index]);
    this.next = next ?? "";
    this.shown = true;
    this.draw();
    return rows;
  }

  // No paging (a ranked search, or a list that is not shown).
  off() {
    this.shown = false;
    this.next = "";
    this.tokens = [""];
    this.index = 0;
    this.draw();
  }

  draw() {
    $(`${this.name}-previous`).disabled = !this.shown || this.index === 0;
    $(`${this.name}-next`).disabled = !this.shown || !this.next;
    $(`${this.name}-page`).textContent = this.shown ? `page ${this.index + 1}` : "";
  }
}

// --- namespaces: a picker from ListNamespaces, or a free text field where it is absent.

let listing = null; // null: not asked yet; false: the server does not list; true: it does

const namespaces = new Pager("namespaces", async (token) => {
  const answer = await call("MemoryService", "ListNamespaces",
    { prefix: "", page_size: 100, page_token: token }, ["unimplemented"]);
  const names = (answer.namespaces ?? []).map((info) => info.name ?? info);
  const picker = $("namespace-picker");
  const prompt = new Option(names.length ? "choose a namespace\u2026" : "no namespace yet", "");
  picker.replaceChildren(prompt, ...names.map((name) => new Option(name, name)));
  picker.value = names.includes(namespace()) ? namespace() : "";
  $("namespace-note").textContent = names.length || token ? ""
    : "The server holds no namespace that this token may read yet: store into one (Ingest, "
      + "RecordEpisode), or type its name.";
  return { next: answer.next_page_token, rows: names.length };
});

async function listNamespaces() {
  try {
    await namespaces.first();
    listing = true;
  } catch (error) {
    if (!(error instanceof CallError) || error.code !== "unimplemented") throw error;
    listing = false;
  }
  $("picker").hidden = !listing;
  $("namespace-pager").hidden = !listing;
  if (!listing) {
    $("namespace-note").textContent = "This server does not list its namespaces (ListNamespaces "
      + "is not implemented there): type the namespace's name.";
  }
}

// Whether `name` is a namespace of the server: true or false where the server lists them,
// null where it cannot say.
async function known(name) {
  if (!listing) return null;
  const answer = await call("MemoryService", "ListNamespaces",
    { prefix: name, page_size: 1, page_token: "" });
  return (answer.namespaces ?? []).some((info) => (info.name ?? info) === name);
}

const unknownNamespace = (name) => `There is no namespace ${quoted(name)} on this server (that `
  + "this token may read): pick one from the list, or check the name (names are case-sensitive).";

// Nothing can be asked without a namespace: say so where the answer would have been.
function needNamespace(emptyId) {
  if (namespace()) return false;
  empty(emptyId, listing ? "Pick a namespace above, or type its name, first."
    : "Type a namespace above first.");
  return true;
}

function namespaceChanged() {
  for (const table of ["hits", "messages", "episodes"]) {
    $(table).querySelector("tbody").replaceChildren();
    empty(`${table}-empty`, "");
  }
  $("context").textContent = "";
  $("timeline-title").textContent = "";
  $("timeline").replaceChildren();
  messages.off();
  episodes.off();
  if (listing) $("namespace-picker").value = namespace();
}

$("namespace-picker").addEventListener("change", () => {
  if (!$("namespace-picker").value) return;
  $("namespace").value = $("namespace-picker").value;
  namespaceChanged();
});
$("namespace").addEventListener("change", namespaceChanged);
$("namespaces-refresh").addEventListener("click", action(listNamespaces));
$("token").addEventListener("change", action(listNamespaces));

// --- search

$("search-form").addEventListener("submit", action(async () => {
  if (needNamespace("hits-empty")) return;
  const query = $("query").value;
  const answer = await call("MemoryService", "Retrieve", {
    namespace: namespace(), query, limit: Number($("limit").value) || 10,
  });
  const hits = answer.hits ?? [];
  fill("hits", hits, (hit) => [hit.score?.toFixed(3), hit.turn_id, hit.session_id, hit.role,
    hit.time ?? hit.date_str, hit.content]);
  $("context").textContent = answer.context ?? "";
  empty("hits-empty", hits.length ? "" : await noHits(namespace(), query));
}));

async function noHits(name, query) {
  const exists = await known(name);
  if (exists === false) return unknownNamespace(name);
  if (exists === null) {
    const probe = await call("MemoryService", "ListMessages", { namespace: name, page_size: 1 });
    if (!(probe.messages ?? []).length) return noMessages(name);
  }
  return `No message in ${quoted(name)} matches ${quoted(query)}. Try other words, or list the `
    + "messages below to see what it holds.";
}

const noMessages = (name) => `Namespace ${quoted(name)} holds no messages: check its name `
  + "(names are case-sensitive), or store some into it first (Ingest).";

// --- messages

const messages = new Pager("messages", async (token) => {
  const name = namespace();
  const answer = await call("MemoryService", "ListMessages", {
    namespace: name, page_size: pageSize(), page_token: token,
  });
  const found = answer.messages ?? [];
  fill("messages", found, ({ message, session, time }) => [message.turn_id, session.session_id,
    message.role, time ?? session.date_str, message.content], ({ message, session }) => [
    button("delete", action(async () => {
      if (!confirm(`Delete message ${message.turn_id}?`)) return;
      await call("MemoryService", "Delete", { namespace: name, ids: [message.turn_id] });
      await messages.reload();
    })),
    button("delete session", action(async () => {
      if (!confirm(`Delete every message of session ${session.session_id}?`)) return;
      await call("MemoryService", "Delete", {
        namespace: name, filter: { session_ids: [session.session_id] },
      });
      await messages.reload();
    })),
  ]);
  let said = "";
  if (!found.length) {
    said = token ? "This page is empty now: go to the previous one."
      : (await known(name)) === false ? unknownNamespace(name) : noMessages(name);
  }
  empty("messages-empty", said);
  return { next: answer.next_page_token, rows: found.length };
});

$("list-form").addEventListener("submit", action(async () => {
  if (needNamespace("messages-empty")) return;
  await messages.first();
}));

// --- episodes

// Listing filters (ListEpisodesRequest's fields); a search (SearchEpisodes) ranks instead.
const EPISODE_FILTERS = { task_id: "episode-task", agent: "episode-agent",
  outcome: "episode-outcome", phase: "episode-phase", file: "episode-file" };

function showEpisodes(found) {
  fill("episodes", found, (episode) => [episode.id, episode.task_id, episode.agent,
    episode.timestamp, episode.context?.goal, episode.outcome ?? "success"],
  (episode) => [button("open", action(() => timeline(episode.id)))]);
}

let filters = {};

const episodes = new Pager("episodes", async (token) => {
  const name = namespace();
  const answer = await call("EpisodeService", "ListEpisodes", {
    namespace: name, ...filters, page_size: pageSize(), page_token: token,
  });
  const found = answer.episodes ?? [];
  showEpisodes(found);
  let said = "";
  if (!found.length) {
    if (token) said = "This page is empty now: go to the previous one.";
    else if (Object.keys(filters).length) {
      said = `No episode in ${quoted(name)} matches these filters: clear some of them.`;
    } else if ((await known(name)) === false) said = unknownNamespace(name);
    else {
      said = `Namespace ${quoted(name)} holds no episodes: check its name, or record some `
        + "into it first (RecordEpisode).";
    }
  }
  empty("episodes-empty", said);
  return { next: answer.next_page_token, rows: found.length };
});

$("episodes-form").addEventListener("submit", action(async () => {
  if (needNamespace("episodes-empty")) return;
  const query = $("episode-query").value.trim();
  filters = Object.fromEntries(Object.entries(EPISODE_FILTERS)
    .map(([field, id]) => [field, $(id).value.trim()]).filter(([, value]) => value));
  if (!query) {
    await episodes.first();
    return;
  }
  const answer = await call("EpisodeService", "SearchEpisodes", {
    namespace: namespace(), task: { goal: query }, query,
  });
  const found = (answer.hits ?? []).map((hit) => hit.episode);
  episodes.off(); // a ranked search is one list, the best first
  showEpisodes(found);
  empty("episodes-empty", found.length ? "" : `No episode in ${quoted(namespace())} matches `
    + `${quoted(query)}. Try other words, or leave the search empty to list them.`);
}));

// One episode as a timeline: its tool calls in order (seconds since it started), then the
// errors it met in order, each with how it was resolved.
async function timeline(id) {
  const { episode } = await call("EpisodeService", "GetEpisode", { namespace: namespace(), id });
  $("timeline-title").textContent = `${episode.id}: ${episode.context?.goal ?? ""}`;
  const items = [
    ...(episode.action_log ?? []).map((a) => ["action", `${a.t}s ${a.action} ${a.target}: ${a.result}`]),
    ...(episode.errors_encountered ?? []).map((e) => ["error",
      `error ${e.type}: ${e.message}${e.resolution ? ` -> ${e.resolution}` : " (unresolved)"}`]),
  ];
  $("timeline").replaceChildren(...items.map(([kind, text]) => {
    const li = document.createElement("li");
    li.className = kind;
    li.textContent = text;
    return li;
  }));
  if (!items.length) $("timeline").replaceChildren(Object.assign(document.createElement("li"),
    { textContent: "This episode recorded no tool call and met no error." }));
}

messages.off();
episodes.off();
action(listNamespaces)();
