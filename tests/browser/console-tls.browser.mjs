// console-tls.browser.mjs -- the console over TLS, where the browser
// speaks HTTP/2 (ALPN h2) and the session cookie must be __Host- and
// Secure: log in, read the overview, make a write with the CSRF token, and
// log out. The certificate is self-signed for 127.0.0.1, which chromium is
// told to accept; nothing but 127.0.0.1 is visited.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import puppeteer from "puppeteer-core";
import { admin, artifactsDir, CHROMIUM, ensureArtifactsDir, startSluiced, tenant } from "./harness.mjs";

let server, browser, page;
const protocols = new Set(); // what chromium negotiated for the console's requests

before(async () => {
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: install Debian's chromium (scripts/setup does)`);
  ensureArtifactsDir();
  server = await startSluiced({ tls: true });
  browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    acceptInsecureCerts: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"],
  });
  page = await browser.newPage();
  await page.setViewport({ width: 1400, height: 900 });
  const cdp = await page.createCDPSession();
  await cdp.send("Network.enable");
  cdp.on("Network.responseReceived", (e) => {
    if (e.response.url.startsWith(server.adminUrl)) protocols.add(e.response.protocol);
  });
});

after(async () => {
  if (browser) await browser.close();
  if (server) {
    const { code } = await server.stop();
    assert.equal(code, 0, "sluiced exits cleanly");
  }
});

test("the console over TLS and HTTP/2", async () => {
  await page.goto(`${server.adminUrl}/`);
  assert.equal(new URL(page.url()).pathname, "/console/login");
  await page.type("#secret", admin.secret);
  await Promise.all([page.waitForNavigation(), page.click("#login-button")]);
  assert.equal(new URL(page.url()).pathname, "/console/");

  const cookies = await page.cookies();
  const session = cookies.find((c) => c.name === "__Host-sluice_session");
  assert.ok(session, `a __Host- session cookie (got ${cookies.map((c) => c.name).join(", ")})`);
  assert.equal(session.secure, true);
  assert.equal(session.httpOnly, true);
  assert.equal(session.sameSite, "Strict");
  assert.equal(session.path, "/");

  await page.waitForSelector(`#tenants tr[data-tenant="${tenant.name}"]`);
  // A write from the page: the CSRF token goes with the cookie over h2.
  const reload = await page.evaluate(async () => {
    const { csrf_token: csrf } = await (await fetch("/console/session")).json();
    const r = await fetch("/api/reload", { method: "POST", headers: { "X-Sluice-CSRF": csrf } });
    return { status: r.status, body: await r.json() };
  });
  assert.equal(reload.status, 200);
  assert.equal(reload.body.ok, true);
  assert.ok(protocols.has("h2"), `HTTP/2 was negotiated (saw ${[...protocols].join(", ")})`);
  await page.screenshot({ path: join(artifactsDir, "tls-overview.png"), fullPage: true });

  await Promise.all([page.waitForNavigation(), page.click("#logout")]);
  assert.equal(new URL(page.url()).pathname, "/console/login");
  assert.equal((await page.cookies()).find((c) => c.name === "__Host-sluice_session"), undefined);
});
