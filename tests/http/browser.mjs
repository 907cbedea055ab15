// Drives the memory browser in Debian's Chromium (never a downloaded browser) and prints what
// the page showed as JSON. Usage: node browser.mjs SCENARIO URL NAMESPACE ARGS...
//   messages QUERY SESSION [PNG]  search QUERY (the hits' turns, the context), list the
//                                 messages, delete SESSION with the confirmation accepted,
//                                 list the sessions left
//   episodes AGENT OUTCOME ID     list the episodes, then those of AGENT with OUTCOME, open ID
//                                 (its timeline's items, each with its kind)
//   token QUERY TOKEN             search QUERY without a token (the error shown), then with
//                                 TOKEN typed in (the hits' turns)
//   picker MODE                   the namespace picker where the server lists namespaces
//                                 (MODE listed: two pages, answered here as ListNamespaces
//                                 answers), where it answers 404 (absent: a server
//                                 without the RPC) or unimplemented, or as the real server
//                                 answers it (server); then list the namespace
//   empty                         what the page says for no hits, an unknown namespace, no
//                                 namespace, filters that match nothing
//   errors                        a call the server refuses (a namespace no name can be); then, once told on stdin that the
//                                 server is stopped (it prints "ready" first), a call to it
//   paging                        five messages a page, forth and back, a delete on page 2;
//                                 five episodes a page, forth and back
//   layout QUERY ID               search, list, show the episodes and open ID, then measure
//                                 the page against the window (WIDTH, default 1280)
//   screenshot QUERY ID PNG       search QUERY, list the messages and the episodes, open ID,
//                                 and take a screenshot of the whole page (at WIDTH)
// WIDTH: the window's width in CSS pixels, from the environment (HIMGA_BROWSER_WIDTH).
import { createInterface } from "node:readline";
import { chromium } from "playwright-core";

const [scenario, url, namespace, ...args] = process.argv.slice(2);
const width = Number(process.env.HIMGA_BROWSER_WIDTH) || 1280;
const text = (selector) => page.textContent(selector);
const visible = (selector) => page.isVisible(selector);
const options = () => page.$$eval("#namespace-picker option", (all) => all.map((o) => o.value));

// Waits until the element's text is not `before` (a redrawn empty state, a new error).
async function changed(selector, before = "") {
  await page.waitForFunction(([s, b]) => (document.querySelector(s).textContent ?? "") !== b,
    [selector, before]);
  return text(selector);
}

async function setNamespace(name) {
  await page.fill("#namespace", name);
  await page.dispatchEvent("#namespace", "change");
}

// Clicks a pager's button and waits for its page number to become `page`.
async function turn(list, which, number) {
  await page.click(`#${list}-${which}`);
  await page.waitForFunction(([l, n]) => document.querySelector(`#${l}-page`).textContent
    === `page ${n}`, [list, number]);
}

const pagerState = async (list) => ({
  page: await text(`#${list}-page`),
  previous: await page.isEnabled(`#${list}-previous`),
  next: await page.isEnabled(`#${list}-next`),
});
const column = (table, index) => page.$$eval(`#${table} tbody tr`,
  (rows, i) => rows.map((r) => r.children[i].textContent), index);

async function search(query) {
  await page.fill("#query", query);
  await page.click("#search-form button");
  await page.waitForSelector("#hits tbody tr");
  return { hits: await column("hits", 1), context: await page.textContent("#context") };
}

async function listMessages() {
  await page.click("#list-form button");
  await page.waitForSelector("#messages tbody tr");
  return column("messages", 1);
}

// Shows the episodes the form's filters select, once the table has been redrawn.
async function showEpisodes() {
  await page.evaluate(() => document.querySelector("#episodes tbody").replaceChildren());
  await page.click("#episodes-form button");
  await page.waitForSelector("#episodes tbody tr");
  return column("episodes", 0);
}

async function open(id) {
  const row = page.locator("#episodes tbody tr", { hasText: id }).first();
  await row.locator("button", { hasText: "open" }).click();
  await page.waitForSelector("#timeline li");
  return {
    title: await page.textContent("#timeline-title"),
    timeline: await page.$$eval("#timeline li", (items) => items.map((li) => [li.className, li.textContent])),
  };
}

const scenarios = {
  async messages(query, session, screenshot) {
    const found = await search(query);
    const before = await listMessages();
    if (screenshot) await page.screenshot({ path: screenshot, fullPage: true });
    const row = page.locator("#messages tbody tr", { hasText: session }).first();
    await row.locator("button", { hasText: "delete session" }).click();
    await page.waitForFunction((s) => ![...document.querySelectorAll("#messages tbody tr")]
      .some((r) => r.children[1].textContent === s), session);
    return { ...found, before, after: await column("messages", 1) };
  },
  async episodes(agent, outcome, id) {
    const all = await showEpisodes();
    await page.fill("#episode-agent", agent);
    await page.selectOption("#episode-outcome", outcome);
    const filtered = await showEpisodes();
    return { all, filtered, ...(await open(id)) };
  },
  async token(query, token) {
    await page.fill("#query", query);
    await page.click("#search-form button");
    await page.waitForFunction(() => document.querySelector("#error-text").textContent
      .startsWith("Retrieve"));
    const refused = await text("#error-text");
    await page.fill("#token", token);
    return { refused, ...(await search(query)), error: await text("#error-text") };
  },
  async picker(mode) {
    const pages = {
      "": { namespaces: [{ name: "agents", memory: "" }, { name: namespace, memory: "keyword" }],
        next_page_token: "page-2" },
      "page-2": { namespaces: [{ name: "zz-last", memory: "keyword" }], next_page_token: "" },
    };
    if (mode !== "server") {
      await page.route("**/himga.memory.v1.MemoryService/ListNamespaces", async (route) => {
        const asked = JSON.parse(route.request().postData() || "{}");
        if (mode === "absent") {
          await route.fulfill({ status: 404, contentType: "text/plain", body: "404 Not Found" });
        } else if (mode === "unimplemented") {
          await route.fulfill({ status: 501, contentType: "application/json",
            body: JSON.stringify({ code: "unimplemented", message: "method not implemented" }) });
        } else {
          const answer = asked.prefix
            ? { namespaces: Object.values(pages).flatMap((p) => p.namespaces)
              .filter((n) => n.name.startsWith(asked.prefix)).slice(0, 1), next_page_token: "" }
            : pages[asked.page_token ?? ""];
          await route.fulfill({ status: 200, contentType: "application/json",
            body: JSON.stringify(answer) });
        }
      });
    }
    await page.reload();
    await page.waitForFunction(() => document.querySelector("#namespace-note").textContent
      || !document.querySelector("#picker").hidden);
    const seen = { picker: await visible("#namespace-picker"), note: await text("#namespace-note"),
      field: await visible("#namespace"), error: await text("#error-text") };
    if (seen.picker && mode === "server") {
      seen.first = await options();
      await page.selectOption("#namespace-picker", namespace);
    } else if (seen.picker) {
      seen.first = await options();
      await turn("namespaces", "next", 2);
      seen.second = await options();
      await turn("namespaces", "previous", 1);
      seen.back = await options();
      await page.selectOption("#namespace-picker", namespace);
    } else {
      await page.fill("#namespace", namespace);
    }
    seen.namespace = await page.inputValue("#namespace");
    seen.messages = await listMessages();
    await setNamespace("no-such-namespace");
    await page.click("#list-form button");
    seen.unknown = await changed("#messages-empty");
    return seen;
  },
  async empty() {
    const seen = {};
    await page.fill("#query", "zebra xylophone quasar");
    await page.click("#search-form button");
    seen.noHits = await changed("#hits-empty");
    await setNamespace("no-such-namespace");
    await page.click("#search-form button");
    seen.unknownSearch = await changed("#hits-empty");
    await page.click("#list-form button");
    seen.unknownMessages = await changed("#messages-empty");
    await page.click("#episodes-form button");
    seen.unknownEpisodes = await changed("#episodes-empty");
    await setNamespace(namespace);
    await page.fill("#episode-agent", "nobody");
    await page.click("#episodes-form button");
    seen.noEpisodeMatches = await changed("#episodes-empty");
    await setNamespace("");
    await page.click("#list-form button");
    seen.noNamespace = await changed("#messages-empty");
    seen.error = await text("#error-text");
    return seen;
  },
  async errors() {
    const seen = {};
    await page.fill("#query", "dog");
    await setNamespace("not a name!");
    await page.click("#search-form button");
    seen.refused = await changed("#error-text");
    seen.shown = await visible("#error");
    await page.click("#error-dismiss");
    seen.dismissed = !(await visible("#error"));
    console.log("ready");
    for await (const line of createInterface({ input: process.stdin })) { if (line) break; }
    await setNamespace(namespace);
    await page.click("#list-form button");
    seen.down = await changed("#error-text");
    return seen;
  },
  async paging() {
    const seen = {};
    await page.selectOption("#page-size", "5");
    seen.page1 = await listMessages();
    seen.state1 = await pagerState("messages");
    await turn("messages", "next", 2);
    seen.page2 = await column("messages", 0);
    await turn("messages", "next", 3);
    seen.page3 = await column("messages", 0);
    seen.state3 = await pagerState("messages");
    await turn("messages", "previous", 2);
    seen.page2again = await column("messages", 0);
    const gone = seen.page2again[0];
    await page.locator("#messages tbody tr", { hasText: gone }).first()
      .locator("button", { hasText: /^delete$/ }).click();
    await page.waitForFunction((g) => ![...document.querySelectorAll("#messages tbody tr")]
      .some((r) => r.children[0].textContent === g), gone);
    seen.afterDelete = await column("messages", 0);
    seen.stateAfterDelete = await pagerState("messages");
    seen.episodes1 = await showEpisodes();
    seen.episodesState1 = await pagerState("episodes");
    await turn("episodes", "next", 2);
    seen.episodes2 = await column("episodes", 0);
    seen.episodesState2 = await pagerState("episodes");
    await turn("episodes", "previous", 1);
    seen.episodes1again = await column("episodes", 0);
    return seen;
  },
  async layout(query, id) {
    await search(query);
    await listMessages();
    await showEpisodes();
    await open(id);
    return page.evaluate(() => {
      const right = (selector) => Math.max(...[...document.querySelectorAll(selector)]
        .map((e) => e.getBoundingClientRect().right));
      const content = [...document.querySelectorAll("#messages tbody tr")]
        .map((r) => r.children[4].getBoundingClientRect());
      return {
        window: window.innerWidth,
        page: document.documentElement.scrollWidth,
        cells: right("td, input, select, button, pre"),
        contentLeft: Math.min(...content.map((r) => r.left)),
        contentRight: Math.max(...content.map((r) => r.right)),
        contentWidth: Math.min(...content.map((r) => r.width)),
        // Buttons whose label does not fit in them (their text runs out of their box).
        squeezed: [...document.querySelectorAll("button")].filter((b) => b.offsetWidth
          && b.scrollWidth > b.clientWidth + 1).map((b) => b.textContent),
      };
    });
  },
  async screenshot(query, id, png) {
    await search(query);
    await listMessages();
    await showEpisodes();
    await open(id);
    await page.evaluate(() => window.scrollTo(0, 0)); // the header where a person sees it first
    await page.screenshot({ path: png, fullPage: true });
    return { screenshot: png };
  },
};

const browser = await chromium.launch({
  executablePath: "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run"],
});
const page = await browser.newPage({ viewport: { width, height: 1000 } });
try {
  page.on("dialog", (dialog) => dialog.accept());
  await page.goto(url);
  await page.fill("#namespace", namespace);
  console.log(JSON.stringify(await scenarios[scenario](...args)));
} finally {
  await browser.close();
}
