// Opens an asyncbpf HTML flame graph in headless Chromium with every network request
// refused, clicks a frame, searches a name, hovers a frame and takes a screenshot.
// Prints what it saw as JSON; the pytest side judges it.
//   node flame.mjs PAGE.html SCREENSHOT.png CLICK_NAME SEARCH_REGEX
import { chromium } from "playwright-core";
import { pathToFileURL } from "node:url";

const [page_path, shot, clickName, searchText] = process.argv.slice(2);
const browser = await chromium.launch({
	executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
	args: ["--no-sandbox"],
});
const out = { console: [], requests: [] };
try {
	const context = await browser.newContext({ offline: true, viewport: { width: 1400, height: 900 } });
	await context.route("**/*", (route) => {
		const url = route.request().url();
		if (url.startsWith("file:"))
			return route.continue();
		out.requests.push(url);
		return route.abort();
	});
	const page = await context.newPage();
	page.on("console", (m) => {
		if (m.type() === "error" || m.type() === "warning")
			out.console.push(m.type() + ": " + m.text());
	});
	page.on("pageerror", (e) => out.console.push("pageerror: " + e.message));
	await page.goto(pathToFileURL(page_path).href);
	await page.waitForSelector(".frame");

	const frames = () =>
		page.$$eval(".frame", (els) =>
			els.map((e) => ({
				name: e.dataset.name,
				cls: e.className,
				width: e.getBoundingClientRect().width,
				bg: getComputedStyle(e).backgroundColor,
			})));
	out.chartWidth = await page.$eval("#chart", (e) => e.getBoundingClientRect().width);
	out.before = await frames();
	await page.screenshot({ path: shot.replace(/\.png$/, "-full.png"), fullPage: true });

	const target = page.locator(".frame", { hasText: clickName }).first();
	await target.hover();
	out.tip = await page.$eval("#tip", (e) => ({ text: e.textContent, shown: getComputedStyle(e).display !== "none" }));
	await target.click();
	out.afterClick = await frames();
	out.zoomed = await page.$$eval(".frame.zoomed", (els) => els.map((e) => ({ name: e.dataset.name, width: e.getBoundingClientRect().width })));

	await page.fill("#search", searchText);
	out.afterSearch = await frames();
	out.matched = await page.$eval("#matched", (e) => e.textContent);
	await page.screenshot({ path: shot, fullPage: true });

	await page.keyboard.press("Escape");
	out.afterReset = await frames();
} finally {
	await browser.close();
}
console.log(JSON.stringify(out));
