// Drives the memory browser in Debian's Chromium (never a downloaded browser) and prints what
// the page showed as JSON. Usage: node browser.mjs SCENARIO URL NAMESPACE ARGS...
//   messages QUERY SESSION [PNG]  search QUERY (the hits' turns, the context), list the
//                                 messages, delete SESSION with the confirmation accepted,
//                                 list the sessions left
//   episodes AGENT OUTCOME ID     list the episodes, then those of AGENT with OUTCOME, open ID
//                                 (its timeline's items, each with its kind)
//   token QUERY TOKEN             search QUERY without a token (the error shown), then with
//                                 TOKEN typed in (the hits' turns)
//   screenshot QUERY ID PNG       search QUERY, list the messages and the episodes, open ID,
//                                 and take a screenshot of the whole page
import { chromium } from "playwright-core";

const [scenario, url, namespace, ...args] = process.argv.slice(2);
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
    await page.waitForFunction(() => document.querySelector("#error").textContent !== "");
    const refused = await page.textContent("#error");
    await page.fill("#token", token);
    return { refused, ...(await search(query)), error: await page.textContent("#error") };
  },
  async screenshot(query, id, png) {
    await search(query);
    await listMessages();
    await showEpisodes();
    await open(id);
    await page.screenshot({ path: png, fullPage: true });
    return { screenshot: png };
  },
};

const browser = await chromium.launch({
  executablePath: "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run"],
});
const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
try {
  page.on("dialog", (dialog) => dialog.accept());
  await page.goto(url);
  await page.fill("#namespace", namespace);
  console.log(JSON.stringify(await scenarios[scenario](...args)));
} finally {
  await browser.close();
}
