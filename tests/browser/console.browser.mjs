// console.browser.mjs -- the web console in Debian's chromium (headless,
// driven by puppeteer-core) against a real sluiced, as an operator uses it:
// log in, watch a queue's counts follow sends, peek a dead-letter queue
// without changing receive counts, redrive it with a progress bar that
// reaches 100 %, purge it behind a typed confirmation, and log out. Along
// the way: a message body with markup and <script> shows as text and runs
// nothing, and a write without the CSRF token is refused. A screenshot of
// each step goes to BUILD/browser-artifacts/ (not into git).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import puppeteer from "puppeteer-core";
import {
  admin, artifactsDir, CHROMIUM, ensureArtifactsDir, sqs, startSluiced, tenant, until,
} from "./harness.mjs";

const XSS_BODY = `<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2"><b>bold?</b>`;
const ARN = (q) => `arn:aws:sqs:us-east-1:${tenant.name}:${q}`;

let server, browser, page;
const consoleErrors = [];
const refusals = []; // "STATUS METHOD PATH" of every answer >= 400 the page got

async function shot(name) {
  await page.screenshot({ path: join(artifactsDir, `${name}.png`), fullPage: true });
}

// The text of a cell of the row whose data-queue is key, on the open page.
async function cell(section, key, field) {
  return page.evaluate((section, key, field) => {
    const row = document.querySelector(`#${section} tr[data-queue="${CSS.escape(key)}"]`);
    const td = row && row.querySelector(`[data-field="${field}"]`);
    return td ? td.textContent : null;
  }, section, key, field);
}

// Clicks the element selector names as it is at that instant. A pointer
// click aims at where the element was a moment before, and the page
// redraws every 2 s.
async function press(selector) {
  await page.$eval(selector, (e) => e.click());
}

async function goto(hash) {
  await page.evaluate((h) => { location.hash = h; }, hash);
  await page.waitForSelector(`#page-${hash}:not([hidden])`);
}

async function createQueue(name, attributes = {}) {
  const r = await sqs(server, "CreateQueue", { QueueName: name, Attributes: attributes });
  return r.QueueUrl;
}

before(async () => {
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: install Debian's chromium (scripts/setup does)`);
  ensureArtifactsDir();
  server = await startSluiced();
  browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    // As root (CI) chromium needs --no-sandbox; nothing but 127.0.0.1 is visited.
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"],
  });
  page = await browser.newPage();
  await page.setViewport({ width: 1400, height: 900 });
  page.on("console", (m) => {
    // Refused requests are checked one by one below, from the responses.
    if (m.type() === "error" && !m.text().startsWith("Failed to load resource")) consoleErrors.push(m.text());
  });
  page.on("response", (r) => {
    if (r.status() >= 400) refusals.push(`${r.status()} ${r.request().method()} ${new URL(r.url()).pathname}`);
  });
  page.on("pageerror", (e) => consoleErrors.push(String(e)));
});

after(async () => {
  if (browser) await browser.close();
  if (server) {
    const { code } = await server.stop();
    assert.equal(code, 0, "sluiced exits cleanly");
  }
});

// Each step needs the ones before it: after a failure the rest are
// skipped, not left to time out one by one.
function stepper(t) {
  let failed = null;
  return async (name, fn) => t.test(name, async (st) => {
    if (failed) {
      st.skip(`after the failure of "${failed}"`);
      return;
    }
    try {
      await fn(st);
    } catch (e) {
      failed = name;
      await shot(`failed-${name.replace(/[^a-z0-9]+/gi, "-")}`).catch(() => {});
      const banner = await page.$eval("#banner", (b) => (b.hidden ? "" : b.textContent)).catch(() => "");
      console.error(`failed step "${name}"; the page's banner: ${banner || "(none)"}`);
      console.error(`sluiced's log, last lines:\n${server.stderr().split("\n").slice(-30).join("\n")}`);
      throw e;
    }
  });
}

test("the console, as an operator uses it", async (t) => {
  const step = stepper(t);
  await step("a browser without a session lands on the login page", async () => {
    await page.goto(`${server.adminUrl}/`);
    assert.equal(new URL(page.url()).pathname, "/console/login");
    await page.type("#secret", "not-the-secret");
    await press("#login-button");
    await page.waitForSelector("#login-error:not([hidden])");
    assert.match(await page.$eval("#login-error", (e) => e.textContent), /not the admin secret/);
    await shot("01-login-refused");
  });

  await step("the admin secret logs in; the cookie is HttpOnly and SameSite=Strict", async () => {
    await page.$eval("#secret", (e) => { e.value = ""; });
    await page.type("#secret", admin.secret);
    await Promise.all([page.waitForNavigation(), page.click("#login-button")]);
    assert.equal(new URL(page.url()).pathname, "/console/");
    const cookies = await page.cookies();
    const session = cookies.find((c) => c.name === "sluice_session");
    assert.ok(session, "a session cookie");
    assert.equal(session.httpOnly, true);
    assert.equal(session.sameSite, "Strict");
    assert.equal(await page.evaluate(() => document.cookie.includes("sluice_session")), false);
    await page.waitForSelector(`#tenants tr[data-tenant="${tenant.name}"]`);
    await shot("02-overview");
  });

  const orders = "orders";
  const dlq = "orders-dlq";
  let ordersUrl, dlqUrl;

  await step("the queues page follows sends", async () => {
    dlqUrl = await createQueue(dlq);
    ordersUrl = await createQueue(orders, {
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: ARN(dlq), maxReceiveCount: 1 }),
    });
    await createQueue("elsewhere");
    await goto("queues");
    const key = `${tenant.name}/${orders}`;
    await until("the orders row", async () => (await cell("queues", key, "ready")) === "0");
    const bodies = ["first", "second", "third", "fourth", XSS_BODY];
    for (const body of bodies) await sqs(server, "SendMessage", { QueueUrl: ordersUrl, MessageBody: body });
    await until("ready = 5 on the page", async () => (await cell("queues", key, "ready")) === "5");
    // And the chart has drawn a line.
    await until("a chart line", () => page.$(`#queues tr[data-queue="${key}"] svg polyline.ready`));
    await shot("03-queues-after-sends");
  });

  await step("pause and resume go through the admin API", async () => {
    const key = `${tenant.name}/elsewhere`;
    // One evaluate, no element handle (the table redraws every 2 s).
    const state = () => page.evaluate((sel) => {
      const row = document.querySelector(sel);
      return {
        badge: row?.querySelector(".badge.bad")?.textContent ?? null,
        button: row?.querySelector("button")?.textContent ?? null,
      };
    }, `#queues tr[data-queue="${key}"]`);
    await press(`#queues tr[data-queue="${key}"] button`);
    await until("the paused badge", async () => (await state()).badge === "paused");
    assert.equal((await state()).button, "Resume");
    await assert.rejects(sqs(server, "SendMessage", { QueueUrl: `${server.endpoint}/${key}`, MessageBody: "x" }), /QueuePaused/);
    await press(`#queues tr[data-queue="${key}"] button`);
    await until("the badge to go", async () => (await state()).badge === null);
    await sqs(server, "SendMessage", { QueueUrl: `${server.endpoint}/${key}`, MessageBody: "x" });
  });

  await step("the filtered depth of a queue that indexes an attribute", async () => {
    const url = await createQueue("encodes", { SluiceFilterKeys: "project" });
    for (const p of ["p-1", "p-2", "p-1"]) {
      await sqs(server, "SendMessage", { QueueUrl: url, MessageBody: p,
        MessageAttributes: { project: { DataType: "String", StringValue: p } } });
    }
    const key = `${tenant.name}/encodes`;
    await until("the queue to pick", () => page.$(`#filter-queue option[value="${key}"]`));
    await page.select("#filter-queue", key);
    await page.type("#filter-pair", "project=p-1");
    await press("#filter-count");
    await until("the count", async () =>
      (await page.$eval("#filter-result", (e) => e.textContent)) === "project=p-1: 2 ready, 0 in flight");
  });

  await step("messages past maxReceiveCount show in the dead-letter queue", async () => {
    // Receives with no visibility timeout until each message has gone
    // past its one receive: the receive after that moves it to the DLQ.
    await until("five messages in the DLQ", async () => {
      await sqs(server, "ReceiveMessage", { QueueUrl: ordersUrl, MaxNumberOfMessages: 10, VisibilityTimeout: 0 });
      const a = await sqs(server, "GetQueueAttributes", { QueueUrl: dlqUrl, AttributeNames: ["All"] });
      return a.Attributes.ApproximateNumberOfMessages === "5";
    });
    // The receives gave the source queue an AgeOfFirstAttempt.
    await until("an age of first attempt", async () =>
      /\d/.test(await cell("queues", `${tenant.name}/${orders}`, "age_of_first_attempt") ?? ""));
    await goto("dlq");
    const key = `${tenant.name}/${dlq}`;
    await until("the DLQ row", async () => (await cell("dlqs", key, "ready")) === "5");
  });

  let counts;
  await step("a peek shows bodies as text and does not change receive counts", async () => {
    const key = `${tenant.name}/${dlq}`;
    await press(`#dlqs tr[data-queue="${key}"] button`);
    await page.waitForSelector("#dlq-detail:not([hidden])");
    const peekCounts = async () => {
      await press("#dlq-peek");
      await page.waitForSelector("#dlq-messages tbody tr[data-message]");
      return page.$$eval("#dlq-messages tbody tr[data-message]", (rows) =>
        Object.fromEntries(rows.map((r) => [r.dataset.message, r.querySelector('[data-field="receive_count"]').textContent])));
    };
    counts = await peekCounts();
    assert.equal(Object.keys(counts).length, 5);
    const again = await peekCounts();
    assert.deepEqual(again, counts, "a second peek sees the same receive counts");

    // The hostile body is there as text: no <b>, no <img>, nothing ran.
    const shown = await page.$$eval('#dlq-messages pre[data-field="body"]', (pres) => pres.map((p) => ({
      text: p.textContent, elements: p.children.length,
    })));
    const hostile = shown.find((s) => s.text === XSS_BODY);
    assert.ok(hostile, "the <script> body is shown verbatim");
    assert.equal(hostile.elements, 0, "and as text, not markup");
    assert.equal(await page.evaluate(() => window.__pwned), undefined, "no script of a body ran");
    assert.equal(await page.$("#dlq-messages b, #dlq-messages img, #dlq-messages script"), null);
    await shot("04-dlq-peek");

    // Nothing was leased: the DLQ still has 5 ready, 0 in flight.
    const a = await sqs(server, "GetQueueAttributes", { QueueUrl: dlqUrl, AttributeNames: ["All"] });
    assert.equal(a.Attributes.ApproximateNumberOfMessages, "5");
    assert.equal(a.Attributes.ApproximateNumberOfMessagesNotVisible, "0");
  });

  await step("a write without the CSRF token is refused", async () => {
    const r = await page.evaluate(async (path) => {
      const res = await fetch(path, { method: "POST", credentials: "same-origin" });
      return { status: res.status, body: await res.json() };
    }, `/api/queues/${tenant.name}/${dlq}/purge`);
    assert.equal(r.status, 403);
    assert.match(r.body.message, /CSRF/);
    const a = await sqs(server, "GetQueueAttributes", { QueueUrl: dlqUrl, AttributeNames: ["ApproximateNumberOfMessages"] });
    assert.equal(a.Attributes.ApproximateNumberOfMessages, "5", "nothing was purged");
  });

  await step("a redrive to the source shows progress up to 100 %", async () => {
    await page.select("#redrive-destination", "");
    await page.$eval("#redrive-rate", (e) => { e.value = "10"; });
    await press("#redrive-start");
    await page.waitForSelector("#redrive-task:not([hidden])");
    await shot("05-redrive-running");
    await until("the redrive to complete", async () =>
      page.$eval("#redrive-task", (e) => e.dataset.status === "COMPLETED" && e.dataset.percent === "100"), 30000);
    assert.match(await page.$eval("#redrive-text", (e) => e.textContent), /moved 5 of 5 \(100 %\)/);
    await until("the bar to fill its track", () => page.$eval("#redrive-bar", (bar) =>
      bar.getBoundingClientRect().width >= bar.parentElement.getBoundingClientRect().width - 1));
    // The peek that showed them refreshes: the DLQ is empty now.
    await until("the peek to show no messages", async () => (await page.$$("#dlq-messages tr[data-message]")).length === 0);
    await shot("06-redrive-done");
    const a = await sqs(server, "GetQueueAttributes", { QueueUrl: ordersUrl, AttributeNames: ["ApproximateNumberOfMessages"] });
    assert.equal(a.Attributes.ApproximateNumberOfMessages, "5", "all five are back in the source");
  });

  await step("a slow redrive to another queue can be cancelled", async () => {
    const batch = Array.from({ length: 10 }, (_, i) => ({ Id: `m${i}`, MessageBody: `stale ${i}` }));
    await sqs(server, "SendMessageBatch", { QueueUrl: dlqUrl, Entries: batch });
    await sqs(server, "SendMessageBatch", { QueueUrl: dlqUrl, Entries: batch });
    await page.select("#redrive-destination", `${tenant.name}/elsewhere`);
    await page.$eval("#redrive-rate", (e) => { e.value = "1"; });
    await press("#redrive-start");
    await until("the slow redrive to run", () =>
      page.$eval("#redrive-task", (e) => e.dataset.status === "RUNNING"));
    await page.waitForSelector(`#dlqs tr[data-queue="${tenant.name}/${dlq}"] .badge.warn`); // "redriving"
    await press("#redrive-cancel");
    await until("the redrive to be cancelled", () =>
      page.$eval("#redrive-task", (e) => e.dataset.status === "CANCELLED"));
    const pct = Number(await page.$eval("#redrive-task", (e) => e.dataset.percent));
    assert.ok(pct < 100, `stopped short of 100 % (${pct} %)`);
    assert.equal(await page.$eval("#redrive-cancel", (b) => b.hidden), true, "nothing left to cancel");
    assert.equal(await page.$eval("#redrive-start", (b) => b.disabled), false, "a new redrive may start");
    await shot("07-redrive-cancelled");
  });

  await step("one peeked message can be deleted, after a confirmation", async () => {
    const count = async () => Number((await sqs(server, "GetQueueAttributes", {
      QueueUrl: dlqUrl, AttributeNames: ["ApproximateNumberOfMessages"],
    })).Attributes.ApproximateNumberOfMessages);
    const before = await count();
    await press("#dlq-peek");
    await page.waitForSelector("#dlq-messages tbody tr[data-message] button");
    const id = await page.$eval("#dlq-messages tbody tr[data-message]", (r) => r.dataset.message);
    // Answers the next confirmation; resolves once it has been shown.
    const answer = (accept) => new Promise((resolve) => page.once("dialog", async (d) => {
      await (accept ? d.accept() : d.dismiss());
      resolve(d.message());
    }));
    const button = `#dlq-messages tr[data-message="${id}"] button`;
    let shown = answer(false);
    await page.$eval(button, (b) => b.click());
    assert.match(await shown, new RegExp(`Delete message ${id}`));
    assert.equal(await count(), before, "a dismissed confirmation deletes nothing");
    shown = answer(true);
    await page.$eval(button, (b) => b.click());
    await shown;
    await until("the message to go", async () => (await page.$(`#dlq-messages tr[data-message="${id}"]`)) === null);
    assert.equal(await count(), before - 1);
  });

  await step("purge asks for the queue's name first", async () => {
    const left = Number((await sqs(server, "GetQueueAttributes", {
      QueueUrl: dlqUrl, AttributeNames: ["ApproximateNumberOfMessages"],
    })).Attributes.ApproximateNumberOfMessages);
    assert.ok(left > 0, "the cancelled redrive left messages behind");
    await press("#purge-open");
    await page.waitForSelector("#purge-confirm:not([hidden])");
    assert.equal(await page.$eval("#purge-go", (b) => b.disabled), true);
    await page.type("#purge-typed", "orders");
    assert.equal(await page.$eval("#purge-go", (b) => b.disabled), true, "a wrong name does not unlock it");
    await page.type("#purge-typed", "-dlq");
    assert.equal(await page.$eval("#purge-go", (b) => b.disabled), false);
    await shot("08-purge-confirm");
    await press("#purge-go");
    await until("the purge result", async () =>
      new RegExp(`Purged ${left} messages`).test(await page.$eval("#purge-result", (e) => e.textContent)));
    const a = await sqs(server, "GetQueueAttributes", { QueueUrl: dlqUrl, AttributeNames: ["ApproximateNumberOfMessages"] });
    assert.equal(a.Attributes.ApproximateNumberOfMessages, "0");
    await shot("09-purged");
  });

  await step("the overview follows a tenant's backlog and request rate", async () => {
    await goto("overview");
    const row = `#tenants tr[data-tenant="${tenant.name}"]`;
    // One evaluate, no element handle: the page redraws the table every
    // 2 s, and a handle taken just before a redraw points at nothing.
    const field = (f) => page.evaluate((sel) => {
      const td = document.querySelector(sel);
      return td ? td.textContent.replace(/,/g, "") : null;
    }, `${row} [data-field="${f}"]`);
    await page.waitForSelector(row);
    const before = Number(await field("backlog"));
    const url = `${server.endpoint}/${tenant.name}/elsewhere`;
    for (let i = 0; i < 3; i++) await sqs(server, "SendMessage", { QueueUrl: url, MessageBody: `late ${i}` });
    await until("the backlog to grow by 3", async () => Number(await field("backlog")) === before + 3);
    // Requests keep coming while the page measures their rate.
    await until("a request rate", async () => {
      await sqs(server, "GetQueueUrl", { QueueName: "elsewhere" });
      return Number(await field("rate")) > 0;
    });
    await shot("10-overview-live");
  });

  await step("the partitions page shows each writer", async () => {
    await goto("partitions");
    await page.waitForSelector('#partitions tr[data-partition="3"]');
    assert.equal((await page.$$("#partitions tbody tr")).length, 4);
    await shot("11-partitions");
  });

  await step("logout ends the session", async () => {
    await Promise.all([page.waitForNavigation(), page.click("#logout")]);
    assert.equal(new URL(page.url()).pathname, "/console/login");
    const status = await page.evaluate(async () => (await fetch("/tenants")).status);
    assert.equal(status, 401);
    await page.goto(`${server.adminUrl}/console/`);
    assert.equal(new URL(page.url()).pathname, "/console/login");
  });

  await step("no script error, no CSP violation, no refusal but the ones asked for", () => {
    assert.deepEqual(consoleErrors, []);
    assert.deepEqual(refusals, [
      "403 POST /console/login",
      `403 POST /api/queues/${tenant.name}/${dlq}/purge`,
      "401 GET /tenants",
    ]);
  });
});
