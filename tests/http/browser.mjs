// Drives the memory browser in Debian's Chromium (never a downloaded browser): searches a
// namespace for a question, prints the hits' turns, deletes a session with the confirmation
// accepted, prints the turns left. Usage: node browser.mjs URL NAMESPACE QUERY SESSION [PNG]
import { chromium } from "playwright-core";

const [url, namespace, query, session, screenshot] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run"],
});
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
  page.on("dialog", (dialog) => dialog.accept());
  await page.goto(url);
  await page.fill("#namespace", namespace);
  await page.fill("#query", query);
  await page.click("#search-form button");
  await page.waitForSelector("#hits tbody tr");
  const hits = await page.$$eval("#hits tbody tr", (rows) => rows.map((r) => r.children[1].textContent));
  const context = await page.textContent("#context");
  await page.click("#list-form button");
  await page.waitForSelector("#messages tbody tr");
  if (screenshot) await page.screenshot({ path: screenshot, fullPage: true });
  const before = await page.$$eval("#messages tbody tr", (rows) => rows.map((r) => r.children[1].textContent));
  const row = page.locator("#messages tbody tr", { hasText: session }).first();
  await row.locator("button", { hasText: "delete session" }).click();
  await page.waitForFunction((s) => ![...document.querySelectorAll("#messages tbody tr")]
    .some((r) => r.children[1].textContent === s), session);
  const after = await page.$$eval("#messages tbody tr", (rows) => rows.map((r) => r.children[1].textContent));
  console.log(JSON.stringify({ hits, context, before, after }));
} finally {
  await browser.close();
}
