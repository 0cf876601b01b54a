// Checks a speedscope file two ways: against the file-format schema shipped in the
// speedscope package, and by loading it into speedscope itself (its web build, served
// from node_modules to headless Chromium with every other request refused).
// Prints what it saw as JSON.   node speedscope.mjs PROFILE.json [SCREENSHOT.png | --schema-only]
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import Ajv from "ajv";
import { chromium } from "playwright-core";

const require = createRequire(import.meta.url);
const release = path.join(path.dirname(require.resolve("speedscope/package.json")), "dist", "release");
const file = process.argv[2];
const profile = readFileSync(file);
const out = { console: [], requests: [] };

const schema = JSON.parse(readFileSync(path.join(release, "file-format-schema.json"), "utf8"));
const ajv = new Ajv({ allErrors: true, strict: false });
const validate = ajv.compile({ ...schema, $ref: "#/definitions/FileFormat.File" });
out.valid = validate(JSON.parse(profile.toString("utf8")));
out.errors = validate.errors || [];

if (process.argv[3] === "--schema-only") {
	console.log(JSON.stringify(out));
	process.exit(0);
}
const ORIGIN = "http://speedscope.invalid";
const browser = await chromium.launch({
	executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
	args: ["--no-sandbox"],
});
try {
	const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
	await page.route("**/*", (route) => {
		const url = new URL(route.request().url());
		if (url.origin !== ORIGIN) {
			out.requests.push(url.href);
			return route.abort();
		}
		if (url.pathname === "/profile.json")
			return route.fulfill({ body: profile, contentType: "application/json" });
		const local = path.join(release, path.normalize(url.pathname));
		try {
			return route.fulfill({ body: readFileSync(local), contentType: local.endsWith(".js") ? "text/javascript" : local.endsWith(".html") ? "text/html" : undefined });
		} catch (e) {
			out.requests.push(url.href);
			return route.abort();
		}
	});
	page.on("console", (m) => {
		if (m.type() === "error")
			out.console.push(m.text());
	});
	page.on("pageerror", (e) => out.console.push("pageerror: " + e.message));
	await page.goto(ORIGIN + "/index.html#profileURL=" + encodeURIComponent(ORIGIN + "/profile.json"));
	// loaded: the flame chart's canvas is there and the page names the profile
	await page.waitForFunction(() => document.title && document.title !== "speedscope", null, { timeout: 20000 }).catch(() => {});
	out.title = await page.title();
	out.text = (await page.evaluate(() => document.body.innerText)).slice(0, 2000);
	if (process.argv[3])
		await page.screenshot({ path: process.argv[3] });
} finally {
	await browser.close();
}
console.log(JSON.stringify(out));
