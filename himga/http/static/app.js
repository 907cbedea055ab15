// The memory browser: plain JavaScript over the public Connect JSON API of this server (the
// same POST /himga.memory.v1.MemoryService/METHOD a curl call makes), with the token as
// "Authorization: Bearer" when one is typed. No build step.
"use strict";

const $ = (id) => document.getElementById(id);
let pageToken = "";

async function call(service, method, body) {
  const headers = { "Content-Type": "application/json" };
  const token = $("token").value.trim();
  if (token) headers.Authorization = `Bearer ${token}`;
  const answer = await fetch(`/himga.memory.v1.${service}/${method}`, {
    method: "POST", headers, body: JSON.stringify(body),
  });
  const json = await answer.json();
  if (!answer.ok) {
    $("error").textContent = `${method}: ${json.code}: ${json.message}`;
    throw new Error(json.message);
  }
  $("error").textContent = "";
  return json;
}

function row(table, cells, extra) {
  const tr = document.createElement("tr");
  for (const text of cells) {
    const td = document.createElement("td");
    td.textContent = text ?? "";
    tr.append(td);
  }
  if (extra) { const td = document.createElement("td"); td.append(...extra); tr.append(td); }
  $(table).querySelector("tbody").append(tr);
}

function button(label, onClick) {
  const b = document.createElement("button");
  b.textContent = label;
  b.addEventListener("click", onClick);
  return b;
}

const namespace = () => $("namespace").value.trim();

$("search-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const answer = await call("MemoryService", "Retrieve", {
    namespace: namespace(), query: $("query").value, limit: Number($("limit").value) || 10,
  });
  $("hits").querySelector("tbody").replaceChildren();
  for (const hit of answer.hits ?? []) {
    row("hits", [hit.score?.toFixed(3), hit.turn_id, hit.session_id, hit.role,
      hit.time ?? hit.date_str, hit.content]);
  }
  $("context").textContent = answer.context ?? "";
});

async function list(fromStart) {
  if (fromStart) pageToken = "";
  const answer = await call("MemoryService", "ListMessages", {
    namespace: namespace(), page_size: 50, page_token: pageToken,
  });
  pageToken = answer.next_page_token ?? "";
  $("next").disabled = !pageToken;
  $("messages").querySelector("tbody").replaceChildren();
  for (const { message, session, time } of answer.messages ?? []) {
    const forget = button("delete", async () => {
      if (!confirm(`Delete message ${message.turn_id}?`)) return;
      await call("MemoryService", "Delete", { namespace: namespace(), ids: [message.turn_id] });
      await list(true);
    });
    const forgetSession = button("delete session", async () => {
      if (!confirm(`Delete every message of session ${session.session_id}?`)) return;
      await call("MemoryService", "Delete", {
        namespace: namespace(), filter: { session_ids: [session.session_id] },
      });
      await list(true);
    });
    row("messages", [message.turn_id, session.session_id, message.role,
      time ?? session.date_str, message.content], [forget, forgetSession]);
  }
}
$("list-form").addEventListener("submit", (event) => { event.preventDefault(); list(true); });
$("next").addEventListener("click", () => list(false));

// Listing filters (ListEpisodesRequest's fields); a search (SearchEpisodes) ranks instead.
const EPISODE_FILTERS = { task_id: "episode-task", agent: "episode-agent",
  outcome: "episode-outcome", phase: "episode-phase", file: "episode-file" };

$("episodes-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const query = $("episode-query").value.trim();
  const filters = Object.fromEntries(Object.entries(EPISODE_FILTERS)
    .map(([field, id]) => [field, $(id).value.trim()]).filter(([, value]) => value));
  const episodes = query
    ? (await call("EpisodeService", "SearchEpisodes", {
      namespace: namespace(), task: { goal: query }, query,
    })).hits?.map((hit) => hit.episode) ?? []
    : (await call("EpisodeService", "ListEpisodes", { namespace: namespace(), ...filters }))
      .episodes ?? [];
  $("episodes").querySelector("tbody").replaceChildren();
  for (const episode of episodes) {
    row("episodes", [episode.id, episode.task_id, episode.agent, episode.timestamp,
      episode.context?.goal, episode.outcome ?? "success"],
      [button("open", () => timeline(episode.id))]);
  }
});

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
}
