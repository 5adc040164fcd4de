// Lighthouse (mobile, the default form factor) on pages of a running
// ndiro, for `make lighthouse` (e2e/lighthouse.sh, driven by
// TestLighthouse in internal/server). Reads one JSON object on stdin:
// {"chrome": path, "cookie": {name, value, url} or null, "urls": [...]},
// launches that Chromium headless through puppeteer-core, sets the
// session cookie, audits each URL with the image audits and prints one
// JSON line per URL: {"url", "finalUrl", "images" (image requests),
// "imageBytes", "audits": {id: {score, savingsBytes, items}}}. Copied beside node_modules by the script, which is where Node
// resolves "lighthouse" and "puppeteer-core" from.
import lighthouse from "lighthouse";
import puppeteer from "puppeteer-core";

const input = JSON.parse(await new Promise((done) => {
  let s = "";
  process.stdin.on("data", (d) => (s += d));
  process.stdin.on("end", () => done(s));
}));
const browser = await puppeteer.launch({
  executablePath: input.chrome,
  headless: "new",
  args: ["--no-sandbox", "--headless=new"],
});
try {
  const page = await browser.newPage();
  if (input.cookie) {
    await browser.setCookie(input.cookie);
  }
  const port = new URL(browser.wsEndpoint()).port;
  const audits = ["uses-responsive-images", "modern-image-formats", "offscreen-images", "unsized-images", "lcp-lazy-loaded", "prioritize-lcp-image", "network-requests"];
  for (const url of input.urls) {
    const r = await lighthouse(url, {port, output: "json", logLevel: "error", onlyAudits: audits, disableStorageReset: true});
    const out = {};
    for (const id of audits) {
      const a = r.lhr.audits[id];
      if (!a) continue;
      out[id] = {score: a.score, mode: a.scoreDisplayMode, savingsBytes: a.details?.overallSavingsBytes ?? 0,
        items: (a.details?.items ?? []).map((i) => ({url: i.url, wastedBytes: i.wastedBytes ?? 0}))};
    }
    const requests = r.lhr.audits["network-requests"]?.details?.items ?? [];
    const images = requests.filter((i) => i.resourceType === "Image");
    delete out["network-requests"];
    console.log(JSON.stringify({url, finalUrl: r.lhr.finalDisplayedUrl, images: images.length,
      imageBytes: images.reduce((n, i) => n + (i.transferSize ?? 0), 0), audits: out}));
  }
  await page.close();
} finally {
  await browser.close();
}
