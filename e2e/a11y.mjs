// axe-core on every owner page, at both sizes and in both colour schemes
// (make a11y; e2e/a11y.sh starts ndiro with the demo diary and runs this
// beside its npm packages). A11Y_BASE is the app's address, A11Y_PHOTO a
// phone photo with a capture time, CHROME_PATH the browser. It prints one
// line per page and size and scheme, each violation with the elements it
// names, and exits 1 if there is any.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import puppeteer from "puppeteer-core";

const require = createRequire(import.meta.url);
// Evaluated into each page through the DevTools protocol, which runs it
// also where the page's scripts are off and whatever its
// Content-Security-Policy says.
const axeSource = readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");
const base = process.env.A11Y_BASE;
const photo = process.env.A11Y_PHOTO;
if (!base || !photo) {
  console.error("a11y: A11Y_BASE and A11Y_PHOTO must be set (run make a11y)");
  process.exit(2);
}

const sizes = [
  { name: "390x844", viewport: { width: 390, height: 844, isMobile: true, hasTouch: true, deviceScaleFactor: 3 } },
  { name: "1280x800", viewport: { width: 1280, height: 800 } },
];
const schemes = ["light", "dark"];

const browser = await puppeteer.launch({
  executablePath: process.env.CHROME_PATH || "/usr/bin/chromium",
  headless: true,
  args: ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-background-networking", "--disable-component-update"],
});
let failed = 0;
let passed = 0;
try {
  const page = await browser.newPage();
  page.setDefaultTimeout(60000);

  // Sign in as the demo owner through local mode's sign-in page.
  await page.goto(base + "/login", { waitUntil: "load" });
  await page.waitForSelector("#email");
  await page.type("#email", "demo@example.com");
  await Promise.all([page.waitForNavigation({ waitUntil: "load" }), page.keyboard.press("Enter")]);
  await page.goto(base + "/meals", { waitUntil: "load" });
  if (!(await page.$("section.day"))) throw new Error("the demo owner's month shows no meals: not signed in?");

  // Where the owner's pages are, from the diary itself.
  const today = new Date();
  const iso = (d) => d.toISOString().slice(0, 10);
  const prev = new Date(Date.UTC(today.getUTCFullYear(), today.getUTCMonth() - 1, 1));
  const detail = await page.$eval("li.meal a", (a) => a.getAttribute("href"));
  const pages = [
    ["month", "/meals"],
    ["previous month", "/meals?month=" + iso(prev).slice(0, 7)],
    ["window", "/meals?from=" + iso(new Date(Date.now() - 13 * 864e5)) + "&to=" + iso(today)],
    ["window refused", "/meals?from=2026-02-30&to=2026-03-01"],
    ["search", "/meals/search"],
    ["search results", "/meals/search?q=soup"],
    ["search no results", "/meals/search?q=quinoa"],
    ["search refused", "/meals/search?q=" + "x".repeat(101)],
    ["meal", detail],
    ["edit", detail + "/edit"],
    ["add", "/meals/new"],
    ["add for a day", "/meals/new?date=" + iso(today)],
    ["moved meal", detail.replace(/\/[^/]+$/, "/000000-000000")],
    ["shares", "/shares"],
    ["account", "/account"],
    ["account delete", "/account/delete"],
  ];

  // Pages reached by sending a form without the page script: the add form
  // refused (422), and the month a photo's capture time filed a meal on.
  const posted = {
    "add refused": async () => {
      await page.setJavaScriptEnabled(false);
      await page.goto(base + "/meals/new", { waitUntil: "load" });
      await Promise.all([page.waitForNavigation({ waitUntil: "load" }), page.click("form.meal-form button[type=submit]")]);
    },
    "filed by photo": async () => {
      await page.setJavaScriptEnabled(false);
      await page.goto(base + "/meals/new", { waitUntil: "load" });
      const input = await page.$("#photo-camera");
      await input.uploadFile(photo);
      await Promise.all([page.waitForNavigation({ waitUntil: "load" }), page.click("form.meal-form button[type=submit]")]);
      if (!(await page.$("#filed"))) throw new Error("the saved month has no note of the photo's time");
    },
  };

  const check = async (label) => {
    // What closed details hold is checked too.
    await page.evaluate(() => document.querySelectorAll("details").forEach((d) => (d.open = true)));
    await page.evaluate(axeSource);
    const res = await page.evaluate(() => window.axe.run(document, { resultTypes: ["violations"] }));
    if (res.violations.length === 0) {
      passed++;
      console.log(`ok    ${label}`);
      return;
    }
    failed++;
    console.log(`FAIL  ${label}: ${res.violations.length} violation(s)`);
    for (const v of res.violations) {
      console.log(`      ${v.id} (${v.impact}): ${v.help}`);
      for (const n of v.nodes.slice(0, 5)) console.log(`        ${n.target.join(" ")}: ${n.failureSummary.replace(/\s+/g, " ").slice(0, 200)}`);
    }
  };

  for (const size of sizes) {
    await page.setViewport(size.viewport);
    for (const scheme of schemes) {
      await page.emulateMediaFeatures([{ name: "prefers-color-scheme", value: scheme }]);
      for (const [name, path] of pages) {
        await page.setJavaScriptEnabled(true);
        await page.goto(base + path, { waitUntil: "load" });
        await check(`${name} ${path} ${size.name} ${scheme}`);
      }
      for (const [name, open] of Object.entries(posted)) {
        await open();
        // axe runs on timers, which a page without scripts never fires.
        await page.setJavaScriptEnabled(true);
        await check(`${name} ${size.name} ${scheme}`);
      }
    }
  }
} finally {
  await browser.close();
}
console.log(`a11y: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
